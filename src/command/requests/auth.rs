//! The requests of the authentication and user-management commands, as MongoDB 8.0's IDL
//! declares them (`sasl_commands.idl`, `authenticate.idl`, `user_management_commands.idl`):
//! every one strict.

use super::command_request;

command_request! {
    /// `saslStart` (`payload` is BinData or a base64 string: read by `server::auth::sasl`).
    pub struct SaslStartRequest("saslStart") {
        mechanism: Option<String> = "mechanism" via str,
        auto_authorize: Option<bool> = "autoAuthorize" via bool,
    }
    known: ["payload", "options"]
}

command_request! {
    /// `saslContinue`.
    pub struct SaslContinueRequest("saslContinue") {
        conversation_id: Option<i64> = "conversationId" via i64,
    }
    known: ["payload"]
}

command_request! {
    /// `authenticate` (MONGODB-X509 only in MongoDB 8.0).
    pub struct AuthenticateRequest("authenticate") {
        mechanism: Option<String> = "mechanism" via str,
        user: Option<String> = "user" via str,
    }
    known: []
}

command_request! {
    /// `logout`.
    pub struct LogoutRequest("logout") {
    }
    known: []
}

command_request! {
    /// `createUser` and `updateUser` (the same fields; the user's name is the command's value).
    pub struct UserRequest("createUser") {
        pwd: Option<String> = "pwd" via str,
        custom_data: Option<bson::Document> = "customData" via document,
        roles: Option<Vec<bson::Bson>> = "roles" via array,
        digest_password: Option<bool> = "digestPassword" via bool,
        mechanisms: Option<Vec<bson::Bson>> = "mechanisms" via array,
        authentication_restrictions: Option<Vec<bson::Bson>> = "authenticationRestrictions" via array,
    }
    known: []
}

command_request! {
    /// `dropUser`.
    pub struct DropUserRequest("dropUser") {
    }
    known: []
}

command_request! {
    /// `dropAllUsersFromDatabase`.
    pub struct DropAllUsersFromDatabaseRequest("dropAllUsersFromDatabase") {
    }
    known: []
}

command_request! {
    /// `grantRolesToUser` and `revokeRolesFromUser` (the same fields).
    pub struct UserRolesRequest("grantRolesToUser") {
        roles: Option<Vec<bson::Bson>> = "roles" via array,
    }
    known: []
}

command_request! {
    /// `usersInfo` (what to show is the command's value).
    pub struct UsersInfoRequest("usersInfo") {
        show_credentials: Option<bool> = "showCredentials" via bool,
        show_custom_data: Option<bool> = "showCustomData" via bool,
        show_privileges: Option<bool> = "showPrivileges" via bool,
        show_authentication_restrictions: Option<bool> = "showAuthenticationRestrictions" via bool,
        filter: Option<bson::Document> = "filter" via document,
    }
    known: []
}

command_request! {
    /// `rolesInfo` (`showPrivileges` is a boolean or "asUserFragment").
    pub struct RolesInfoRequest("rolesInfo") {
        show_privileges: Option<bson::Bson> = "showPrivileges" via value,
        show_builtin_roles: Option<bool> = "showBuiltinRoles" via bool,
        show_authentication_restrictions: Option<bool> = "showAuthenticationRestrictions" via bool,
    }
    known: []
}

command_request! {
    /// `createRole` and `updateRole` (the same fields; the role's name is the command's value).
    pub struct RoleRequest("createRole") {
        privileges: Option<Vec<bson::Bson>> = "privileges" via array,
        roles: Option<Vec<bson::Bson>> = "roles" via array,
        authentication_restrictions: Option<Vec<bson::Bson>> = "authenticationRestrictions" via array,
    }
    known: []
}

command_request! {
    /// `dropRole`.
    pub struct DropRoleRequest("dropRole") {
    }
    known: []
}

command_request! {
    /// `dropAllRolesFromDatabase`.
    pub struct DropAllRolesFromDatabaseRequest("dropAllRolesFromDatabase") {
    }
    known: []
}

command_request! {
    /// `grantRolesToRole` and `revokeRolesFromRole`.
    pub struct RoleRolesRequest("grantRolesToRole") {
        roles: Option<Vec<bson::Bson>> = "roles" via array,
    }
    known: []
}

command_request! {
    /// `grantPrivilegesToRole` and `revokePrivilegesFromRole`.
    pub struct RolePrivilegesRequest("grantPrivilegesToRole") {
        privileges: Option<Vec<bson::Bson>> = "privileges" via array,
    }
    known: []
}
