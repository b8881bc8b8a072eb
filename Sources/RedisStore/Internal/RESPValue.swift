import HanekeProtocols
import Logging
import NIOCore

/// One value of the Redis serialization protocol, version 2 (RESP2): what a command is sent as (an
/// array of bulk strings) and what a reply is decoded into.
///
/// The five RESP2 types, and the two null forms (`$-1` and `*-1`):
///
/// | type          | first byte | example                         |
/// |---------------|------------|---------------------------------|
/// | simple string | `+`        | `+OK\r\n`                        |
/// | error         | `-`        | `-ERR unknown command\r\n`       |
/// | integer       | `:`        | `:1000\r\n`                      |
/// | bulk string   | `$`        | `$5\r\nhello\r\n`, `$-1\r\n`      |
/// | array         | `*`        | `*2\r\n$1\r\na\r\n:1\r\n`, `*-1\r\n` |
enum RESPValue: Hashable, Sendable {
    /// A short, binary-unsafe string (`+OK`).
    case simpleString(String)
    /// An error reply (`-ERR …`): the server refused the command.
    case error(String)
    /// A signed 64-bit integer.
    case integer(Int64)
    /// A binary-safe string; `nil` for the null bulk string (`$-1`), which is how `GET` says "miss".
    case bulkString(ByteBuffer?)
    /// An array of values; `nil` for the null array (`*-1`).
    case array([RESPValue]?)

    /// A command: an array of bulk strings.
    static func command(_ name: String, _ arguments: [ByteBuffer] = []) -> RESPValue {
        .array([.bulkString(ByteBuffer(string: name))] + arguments.map { .bulkString($0) })
    }

    /// A command whose arguments are all text.
    static func command(_ name: String, _ arguments: String...) -> RESPValue {
        command(name, arguments.map { ByteBuffer(string: $0) })
    }

    /// The text of a simple or bulk string, for replies that are text (`OK`, `PONG`, a cursor).
    var text: String? {
        switch self {
        case .simpleString(let text): text
        case .bulkString(let buffer?): String(buffer: buffer)
        default: nil
        }
    }

    /// The channel and payload of a message published to a channel this connection subscribes to
    /// (`*3 $7 message $<channel> <payload>`); `nil` for anything else.
    var publishedMessage: (channel: String, payload: RESPValue)? {
        guard case .array(let elements?) = self, elements.count == 3, elements[0].text == "message",
              let channel = elements[1].text else { return nil }
        return (channel, elements[2])
    }

    /// The reply in a line, for error messages: strings and errors escaped and cut
    /// (`Logger.describe`), other types by their shape.
    var summary: String {
        func cut(_ text: String) -> String { Logger.describe(text) }
        switch self {
        case .simpleString(let text): return "+" + cut(text)
        case .error(let text): return "-" + cut(text)
        case .integer(let number): return ":\(number)"
        case .bulkString(nil): return "a null bulk string"
        case .bulkString(let buffer?): return "a \(buffer.readableBytes)-byte bulk string"
        case .array(nil): return "a null array"
        case .array(let elements?): return "an array of \(elements.count)"
        }
    }
}
