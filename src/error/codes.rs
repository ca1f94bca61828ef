//! MongoDB's error-code table (code, codeName, categories), mirroring `error_codes.yml`.

use std::borrow::Cow;

/// Error categories from `error_codes.yml` that the cluster acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCategory {
    NetworkError,
    NotPrimaryError,
    RetriableError,
    StaleShardVersionError,
    NeedRetargettingError,
    Interruption,
    ExceededTimeLimitError,
    ShutdownError,
    CursorInvalidatedError,
    WriteConcernError,
    ConnectionFatalMessageParseError,
    InternalOnly,
}

macro_rules! error_codes {
    ($($name:ident = $code:literal $([$($cat:ident),*])?;)*) => {
        /// A MongoDB error code. Codes MongoDB raises without a name (`uassert` locations such
        /// as 40324) are `Location(n)` and get the codeName `Location<n>`, as MongoDB reports them.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($name,)*
            Location(i32),
        }

        impl ErrorCode {
            /// The numeric code.
            pub fn code(self) -> i32 {
                match self {
                    $(ErrorCode::$name => $code,)*
                    ErrorCode::Location(n) => n,
                }
            }

            /// The codeName a client sees; a `Location(n)` built with a named code still reads
            /// its name from the table.
            pub fn name(self) -> Cow<'static, str> {
                match self.named() {
                    $(ErrorCode::$name => Cow::Borrowed(stringify!($name)),)*
                    ErrorCode::Location(n) => Cow::Owned(format!("Location{n}")),
                }
            }

            /// The table's entry for this code: `Location(n)` of a named code becomes the name.
            pub fn named(self) -> ErrorCode {
                match self {
                    ErrorCode::Location(n) => ErrorCode::from_code(n),
                    named => named,
                }
            }

            /// Looks a numeric code up in the table; unknown codes are locations.
            pub fn from_code(code: i32) -> ErrorCode {
                match code {
                    $($code => ErrorCode::$name,)*
                    n => ErrorCode::Location(n),
                }
            }

            /// The categories MongoDB files this code under.
            pub fn categories(self) -> &'static [ErrorCategory] {
                match self.named() {
                    $($(ErrorCode::$name => &[$(ErrorCategory::$cat),*],)?)*
                    _ => &[],
                }
            }
        }
    };
}

error_codes! {
    OK = 0;
    InternalError = 1;
    BadValue = 2;
    NoSuchKey = 4;
    GraphContainsCycle = 5;
    HostUnreachable = 6 [NetworkError, RetriableError];
    HostNotFound = 7 [NetworkError, RetriableError];
    UnknownError = 8;
    FailedToParse = 9;
    CannotMutateObject = 10;
    UserNotFound = 11;
    UnsupportedFormat = 12;
    Unauthorized = 13;
    TypeMismatch = 14;
    Overflow = 15;
    InvalidLength = 16;
    ProtocolError = 17;
    AuthenticationFailed = 18;
    CannotReuseObject = 19;
    IllegalOperation = 20;
    EmptyArrayOperation = 21;
    InvalidBSON = 22;
    AlreadyInitialized = 23;
    LockTimeout = 24 [Interruption];
    RemoteValidationError = 25;
    NamespaceNotFound = 26;
    IndexNotFound = 27;
    PathNotViable = 28;
    NonExistentPath = 29;
    InvalidPath = 30;
    RoleNotFound = 31;
    CannotBackfillArray = 34;
    ConflictingUpdateOperators = 40;
    CursorNotFound = 43 [CursorInvalidatedError];
    LockBusy = 46;
    NoMatchingDocument = 47;
    NamespaceExists = 48;
    InvalidRoleModification = 49;
    MaxTimeMSExpired = 50 [Interruption, ExceededTimeLimitError];
    ManualInterventionRequired = 51;
    DollarPrefixedFieldName = 52;
    InvalidIdField = 53;
    NotSingleValueField = 54;
    InvalidDBRef = 55;
    EmptyFieldName = 56;
    DottedFieldName = 57;
    CommandNotFound = 59;
    ShardKeyNotFound = 61;
    WriteConcernTimeout = 64 [WriteConcernError];
    MultipleErrorsOccurred = 65;
    ImmutableField = 66;
    CannotCreateIndex = 67;
    IndexAlreadyExists = 68;
    ShardNotFound = 70;
    ReplicaSetNotFound = 71;
    InvalidOptions = 72;
    InvalidNamespace = 73;
    NodeNotFound = 74;
    NoReplicationEnabled = 76;
    OperationIncomplete = 77;
    UnknownReplWriteConcern = 79 [WriteConcernError];
    NoProgressMade = 82;
    IndexOptionsConflict = 85;
    IndexKeySpecsConflict = 86;
    CannotSplit = 87;
    NetworkTimeout = 89 [NetworkError, RetriableError];
    CallbackCanceled = 90;
    ShutdownInProgress = 91 [ShutdownError, RetriableError];
    NotYetInitialized = 94;
    OperationFailed = 96 [CursorInvalidatedError];
    NoProjectionFound = 97;
    DBPathInUse = 98;
    UnsatisfiableWriteConcern = 100 [WriteConcernError];
    IncompatibleShardingMetadata = 105;
    LockFailed = 107;
    ConfigurationInProgress = 109;
    NotExactValueField = 111;
    WriteConflict = 112;
    CommandNotSupported = 115;
    DocTooLargeForCapped = 116;
    ConflictingOperationInProgress = 117;
    NamespaceNotSharded = 118;
    DocumentValidationFailure = 121;
    NotAReplicaSet = 123;
    CommandFailed = 125;
    LockNotFound = 128;
    FailedToSatisfyReadPreference = 133;
    ReadConcernMajorityNotAvailableYet = 134 [RetriableError];
    CappedPositionLost = 136;
    InvalidSSLConfiguration = 140;
    CursorInUse = 143;
    ExceededMemoryLimit = 146;
    ZLibError = 147;
    NoConfigPrimary = 149;
    StaleEpoch = 150 [StaleShardVersionError, NeedRetargettingError];
    OperationCannotBeBatched = 151;
    ChunkTooBig = 153;
    InconsistentShardIdentity = 154;
    DurationOverflow = 159;
    MaxStalenessOutOfRange = 160;
    IncompatibleCollationVersion = 161;
    CollectionIsEmpty = 162;
    ZoneStillInUse = 163;
    ViewDepthLimitExceeded = 165;
    CommandNotSupportedOnView = 166;
    OptionNotSupportedOnView = 167;
    InvalidPipelineOperator = 168;
    CommandOnShardedViewNotSupportedOnMongod = 169;
    TooManyMatchingDocuments = 170;
    CannotIndexParallelArrays = 171;
    QueryPlanKilled = 175 [CursorInvalidatedError];
    FileOpenFailed = 176;
    ZoneNotFound = 177;
    RangeOverlapConflict = 178;
    AmbiguousIndexKeyPattern = 181;
    InvalidViewDefinition = 182;
    ClientMetadataMissingField = 183;
    ClientMetadataAppNameTooLarge = 184;
    ClientMetadataDocumentTooLarge = 185;
    ClientMetadataCannotBeMutated = 186;
    IncompatibleServerVersion = 188;
    PrimarySteppedDown = 189 [NotPrimaryError, RetriableError];
    FailPointEnabled = 192;
    BalancerInterrupted = 194;
    InvalidIndexSpecificationOption = 197;
    LockStateChangeFailed = 198;
    ChunkRangeCleanupPending = 200;
    CannotBuildIndexKeys = 201;
    NetworkInterfaceExceededTimeLimit = 202 [ExceededTimeLimitError];
    ShardingStateNotInitialized = 203;
    TimeProofMismatch = 204;
    ClusterTimeFailsRateLimiter = 205;
    NoSuchSession = 206;
    InvalidUUID = 207;
    TooManyLocks = 208;
    StaleClusterTime = 209;
    KeyNotFound = 211;
    DuplicateSession = 213;
    DatabaseDropPending = 215;
    ElectionInProgress = 216;
    IncompleteTransactionHistory = 217;
    UpdateOperationFailed = 218;
    IndexModified = 221;
    CloseChangeStream = 222;
    IllegalOpMsgFlag = 223 [ConnectionFatalMessageParseError];
    QueryFeatureNotAllowed = 224;
    TransactionTooOld = 225;
    AtomicityFailure = 226;
    CannotImplicitlyCreateCollection = 227;
    SessionTransferIncomplete = 228;
    MustDowngrade = 229;
    MaxSubPipelineDepthExceeded = 232;
    TooManyDocumentSequences = 233 [ConnectionFatalMessageParseError];
    RetryChangeStream = 234;
    InternalErrorNotSupported = 235;
    CursorKilled = 237 [Interruption, CursorInvalidatedError];
    NotImplemented = 238;
    SnapshotTooOld = 239;
    ConversionFailure = 241;
    CannotCreateCollection = 242;
    IncompatibleWithUpgradedServer = 243;
    BrokenPromise = 245;
    SnapshotUnavailable = 246;
    StaleDbVersion = 249;
    StaleChunkHistory = 250;
    NoSuchTransaction = 251;
    ReentrancyNotAllowed = 252;
    TransactionCommitted = 256;
    TransactionTooLarge = 257;
    UnknownFeatureCompatibilityVersion = 258;
    InvalidResumeToken = 260;
    TooManyLogicalSessions = 261;
    ExceededTimeLimit = 262 [Interruption, ExceededTimeLimitError, RetriableError];
    OperationNotSupportedInTransaction = 263;
    TooManyFilesOpen = 264;
    OrphanedRangeCleanUpFailed = 265;
    FailPointSetFailed = 266;
    PreparedTransactionInProgress = 267;
    CannotBackup = 268;
    MigrationConflict = 272;
    IndexBuildAborted = 276;
    UnsatisfiableCommitQuorum = 278;
    ClientDisconnect = 279 [Interruption];
    ChangeStreamFatalError = 280;
    WouldChangeOwningShard = 283;
    IndexBuildAlreadyInProgress = 285;
    ChangeStreamHistoryLost = 286;
    ChecksumMismatch = 288 [ConnectionFatalMessageParseError];
    TransactionExceededLifetimeLimitSeconds = 290 [Interruption, ExceededTimeLimitError];
    NoQueryExecutionPlans = 291;
    QueryExceededMemoryLimitNoDiskUseAllowed = 292;
    DataCorruptionDetected = 301;
    ExhaustCommandFinished = 309;
    ObjectIsBusy = 314 [CursorInvalidatedError];
    MovePrimaryInProgress = 319;
    APIVersionError = 322;
    APIStrictError = 323;
    APIDeprecationError = 324;
    MechanismUnavailable = 334;
    ReshardCollectionInProgress = 338;
    NoSuchReshardCollection = 339;
    ReshardCollectionCommitted = 340;
    ReshardCollectionAborted = 341;
    ShardCannotRefreshDueToLocksHeld = 343;
    ChangeStreamInvalidated = 346;
    APIMismatchError = 347;
    ChangeStreamTopologyChange = 348;
    KeyPatternShorterThanBound = 349;
    UnsupportedOpQueryCommand = 352;
    LoadBalancerSupportMismatch = 354;
    InvalidBSONType = 357;
    CannotConvertIndexToUnique = 359;
    CollectionUUIDMismatch = 361;
    TemporarilyUnavailable = 365;
    CannotDropShardKeyIndex = 370;
    UserWritesBlocked = 371;
    NonConformantBSON = 378;
    CollectionIsEmptyLocally = 383;
    ConnectionError = 384 [NetworkError, RetriableError, InternalOnly];
    ResourceExhausted = 402 [RetriableError];
    AddOrRemoveShardInProgress = 414;
    IndexKeyOrderViolation = 430;
    ChunkMetadataInconsistency = 431;
    AdmissionQueueOverflow = 433;
    InterruptedDueToReshardingCriticalSection = 453 [Interruption, RetriableError];
    SocketException = 9001 [NetworkError, RetriableError];
    CannotGrowDocumentInCappedNamespace = 10003;
    NotWritablePrimary = 10107 [NotPrimaryError, RetriableError];
    BSONObjectTooLarge = 10334;
    DuplicateKey = 11000;
    InterruptedAtShutdown = 11600 [Interruption, ShutdownError, RetriableError];
    Interrupted = 11601 [Interruption];
    InterruptedDueToReplStateChange = 11602 [Interruption, NotPrimaryError, RetriableError];
    BackgroundOperationInProgressForDatabase = 12586;
    BackgroundOperationInProgressForNamespace = 12587;
    MergeStageNoMatchingDocument = 13113;
    DatabaseDifferCase = 13297;
    StaleConfig = 13388 [StaleShardVersionError, NeedRetargettingError];
    NotPrimaryNoSecondaryOk = 13435 [NotPrimaryError, RetriableError];
    NotPrimaryOrSecondary = 13436 [NotPrimaryError, RetriableError];
    OutOfDiskSpace = 14031;
    NamespaceCannotBeSharded = 28769;
    SearchNotEnabled = 31082;
    IDLDuplicateField = 40413;
    IDLFailedToParse = 40414;
    IDLUnknownField = 40415;
    NotARetryableWriteCommand = 50768;
    ConfigServerUnreachable = 56846;
}

impl ErrorCode {
    /// Whether MongoDB files this code under `category`.
    pub fn is(self, category: ErrorCategory) -> bool {
        self.categories().contains(&category)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        assert_eq!(ErrorCode::CommandNotFound.code(), 59);
        assert_eq!(ErrorCode::from_code(11000), ErrorCode::DuplicateKey);
        assert_eq!(ErrorCode::StaleDbVersion.name(), "StaleDbVersion");
        assert_eq!(ErrorCode::from_code(40324).name(), "Location40324");
        assert!(ErrorCode::StaleConfig.is(ErrorCategory::StaleShardVersionError));
        assert!(!ErrorCode::BadValue.is(ErrorCategory::RetriableError));
    }
}
