import HanekeProtocols
import Logging
import NIOCore
import NIOPosix
import NIOSSL
#if canImport(Glibc)
import Glibc
#endif

/// How a command failed below the store: the store turns these into `StoreError`s that name the
/// key, with this error as their cause (its description is the reason, said once).
enum RedisClientError: Error, CustomStringConvertible {
    /// The connection closed (or could not carry the command) before the reply arrived.
    case connectionClosed(cause: (any Error)?)
    /// No reply arrived in time; the connection was dropped.
    case timedOut(TimeAmount)
    /// The server sent bytes that are not RESP2; the connection was dropped.
    case malformedReply(RESPProtocolError)
    /// A connection could not be opened (refused, unreachable, no reply to the handshake).
    case connectFailed(cause: any Error)
    /// The server refused a command of the handshake (`AUTH`, `SELECT`, `PING`).
    case handshakeRefused(command: String, reply: String)
    /// No connection is open, and the last attempt failed too recently to try again yet.
    case backingOff(lastError: any Error, retryIn: TimeAmount)
    /// The store was shut down.
    case shutDown
    /// The server answered a command with an error reply (`-WRONGTYPE …`, `-NOAUTH …`).
    case errorReply(String)
    /// The TLS settings cannot be used: a certificate or key file is missing or unreadable.
    case invalidTLSConfiguration(String)
    /// The cluster named a node that is not one of its own (a redirect, a map): not followed.
    case foreignNode(String)

    var description: String {
        switch self {
        case .connectionClosed(let cause?):
            "the connection closed before the reply arrived (\(cause))"
        case .connectionClosed(nil):
            "the connection closed before the reply arrived"
        case .timedOut(let timeout):
            "no reply within \(Self.describe(timeout)); the connection was dropped"
        case .malformedReply(let error):
            "\(error); the connection was dropped"
        case .connectFailed(let cause):
            "could not connect (\(Self.describeConnectFailure(cause)))"
        case .handshakeRefused(let command, let reply):
            "the server refused \(command): \(Logger.describe(reply))"
        case .backingOff(let lastError, let retryIn):
            "\(lastError); the next connection attempt is in \(Self.describe(retryIn))"
        case .shutDown:
            "the store was shut down"
        case .errorReply(let message):
            // The server's words, escaped and cut (a reply may hold terminal escapes, or 60 KB).
            "Redis answered with an error: \(Logger.describe(message))"
        case .invalidTLSConfiguration(let reason), .foreignNode(let reason):
            reason
        }
    }

    /// The code of the `StoreError` users see: `authentication` when the server refused the
    /// credentials or wants some (also while the pool waits to retry after such a refusal),
    /// `timeout`, `io` for a reply the store cannot use, `unavailable` otherwise.
    var code: StoreError.Code {
        switch self {
        case .handshakeRefused(let command, let reply):
            command == "AUTH" || Self.isAuthenticationReply(reply) ? .authentication : .unavailable
        case .errorReply(let reply):
            Self.isAuthenticationReply(reply) ? .authentication : .io
        case .backingOff(let lastError as RedisClientError, _) where lastError.code == .authentication:
            .authentication
        case .timedOut:
            .timeout
        case .malformedReply:
            .io
        case .invalidTLSConfiguration:
            .invalidConfiguration
        case .connectionClosed, .connectFailed, .backingOff, .shutDown, .foreignNode:
            .unavailable
        }
    }

    /// Whether an error reply says the connection is not logged in or the credentials are wrong:
    /// `NOAUTH Authentication required.`, `WRONGPASS invalid username-password pair …`.
    static func isAuthenticationReply(_ reply: String) -> Bool {
        reply.hasPrefix("NOAUTH") || reply.hasPrefix("WRONGPASS")
    }

    /// Whether the command may simply be sent again on another connection: the connection it was
    /// on went away (every command the store sends but `SET … NX` is idempotent).
    var isRetryable: Bool {
        if case .connectionClosed = self { true } else { false }
    }

    /// What went wrong opening a connection, in a few words: "Connection refused" rather than
    /// NIO's nested connection-attempt report.
    static func describeConnectFailure(_ error: any Error) -> String {
        switch error {
        case let error as NIOConnectionError:
            if let attempt = error.connectionErrors.first { return describeConnectFailure(attempt.error) }
            if let resolution = error.dnsAError ?? error.dnsAAAAError { return "cannot resolve the host: \(resolution)" }
            return "\(error)"
        case let error as IOError:
            return String(cString: strerror(error.errnoCode))
        case ChannelError.connectTimeout(let timeout):
            return "no connection within \(describe(timeout))"
        case RedisClientError.connectionClosed(let cause?):
            // The handshake's first command failed with its connection: say why it closed.
            return describeConnectFailure(cause)
        case NIOSSLError.handshakeFailed(let failure):
            return "the TLS handshake failed: \(describeTLSFailure(failure))"
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return "the TLS handshake failed: the server's certificate does not name the host (\(error))"
        default:
            return "\(error)"
        }
    }

    /// BoringSSL's reasons, without its error numbers: `CERTIFICATE_VERIFY_FAILED`, `WRONG_VERSION_NUMBER`.
    private static func describeTLSFailure(_ failure: BoringSSLError) -> String {
        guard case .sslError(let errors) = failure, !errors.isEmpty else { return "\(failure)" }
        return errors.map { error in
            // "Error: 268435581 error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED at handshake.cc:320"
            let text = "\(error)"
            let message = text.split(separator: " at ", maxSplits: 1).first ?? text[...]
            let reason = message.split(separator: ":").last.map { String($0) } ?? text
            return reason == "CERTIFICATE_VERIFY_FAILED"
                ? "CERTIFICATE_VERIFY_FAILED (the server's certificate does not chain to a trusted authority, or has expired)"
                : reason
        }.joined(separator: ", ")
    }

    static func describe(_ amount: TimeAmount) -> String {
        let milliseconds = Double(amount.nanoseconds) / 1e6
        return milliseconds < 1 ? "\(amount.nanoseconds / 1000) µs" : "\(Int(milliseconds.rounded())) ms"
    }
}
