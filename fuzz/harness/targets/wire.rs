//! Target `wire`: the bytes a client sends, read as a connection reads them — frames off a
//! stream (`read_frame`), each decoded (`decode_request`: OP_MSG with its checksum and
//! sections, OP_QUERY, OP_COMPRESSED with snappy, zlib or zstd), turned into the command it
//! carries, and answered (`encode_reply`) as the connection would.

use bson::rawdoc;
use docgrid::command::CommandRequest;
use docgrid::wire::{Request, decode_request, encode_reply, read_frame};

pub fn run(data: &[u8]) {
    let mut stream = data;
    // The reader is a byte slice, always ready: the future completes in one poll.
    while let Ok(Some(frame)) = futures::executor::block_on(read_frame(&mut stream)) {
        let Ok(request) = decode_request(&frame) else {
            continue;
        };
        let to = request.reply_to();
        let command = match request {
            Request::Msg { msg, .. } => CommandRequest::from_op_msg(msg),
            Request::Query { query, .. } => {
                let db = query
                    .full_collection_name
                    .strip_suffix(".$cmd")
                    .unwrap_or("admin")
                    .to_string();
                CommandRequest::new(db, query.query)
            }
        };
        if let Ok(command) = command {
            let _ = (command.name(), command.args().target());
        }
        let reply = rawdoc! {"ok": 1.0};
        let _ = encode_reply(&to, &reply, 1, true);
    }
}
