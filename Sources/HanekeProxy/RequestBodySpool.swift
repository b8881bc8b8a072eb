import CFileStoreShims
import Foundation
import HanekeProtocols
package import NIOCore
import StoreFolders

#if canImport(Glibc)
import Glibc
#endif

/// A request body as the proxy holds it: in memory up to
/// ``ProxyServer/Limits-swift.struct/requestBodyBufferSize`` bytes, past it in a file of its own.
package enum ProxyRequestBody: Sendable {
    /// The body in memory (in the server's ``MemoryBudget`` while it is read).
    case buffer(ByteBuffer)
    /// The body in an unnamed file (in the server's budget of spooled bytes).
    case spooled(SpooledBody)

    /// The body's length in bytes.
    package var count: Int {
        switch self {
        case .buffer(let buffer): buffer.readableBytes
        case .spooled(let file): file.count
        }
    }
}

/// A whole request body in a file that has no name (`O_TMPFILE`, or a name removed at once), so
/// that nothing is left behind whatever happens to the process: the descriptor is the only way
/// to it, closed when the last request that holds it is gone, and its bytes are given back to
/// the budget of spooled bytes then. The upstream side sends it with `sendfile`.
package final class SpooledBody: Sendable {
    /// The file, read from offset 0; closed by `deinit`.
    let descriptor: Int32
    /// The body's length in bytes.
    package let count: Int
    private let budget: MemoryBudget

    fileprivate init(descriptor: Int32, count: Int, budget: MemoryBudget) {
        self.descriptor = descriptor
        self.count = count
        self.budget = budget
    }

    deinit {
        close(descriptor)
        budget.release(count)
    }
}

/// Writes one request body into an unnamed file as its pieces arrive, on the connection's event
/// loop. The writes block, as nginx's writes of `client_body_temp_path` do: they go to the page
/// cache, a few microseconds for a piece of 64 KiB, and the file is read once, by `sendfile`.
/// The bytes written are taken from the budget of spooled bytes as they arrive.
final class RequestBodySpool {
    private var descriptor: Int32
    private(set) var count = 0
    private let budget: MemoryBudget

    /// Why a spool could not take a piece.
    enum Failure: Error {
        /// The budget of spooled bytes is spent.
        case overBudget
        /// The file could not be made or written; the system's error.
        case io(String)
    }

    /// Makes an unnamed file, private to the user, in `directory`.
    /// - Throws: `Failure.io` when no file can be made there.
    init(directory: String, budget: MemoryBudget) throws(Failure) {
        self.budget = budget
        var made = open(directory, haneke_o_tmpfile() | O_RDWR | O_CLOEXEC, 0o600)
        if made < 0, [EOPNOTSUPP, EISDIR, EINVAL].contains(errno) {
            // A file system without O_TMPFILE: a name of its own (mkstemp: private to the user),
            // removed at once.
            var template = Array((directory + "/.haneke-proxy-body-XXXXXX").utf8CString)
            made = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            if made >= 0 {
                template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
                _ = fcntl(made, F_SETFD, FD_CLOEXEC)
            }
        }
        guard made >= 0 else { throw .io("Could not make a file for a request body in \(directory): \(String(cString: strerror(errno)))") }
        descriptor = made
    }

    deinit {
        if descriptor >= 0 {
            close(descriptor)
            budget.release(count)
        }
    }

    /// Appends `piece` to the file.
    /// - Throws: `Failure.overBudget` when the budget cannot take it, `Failure.io` when it cannot
    ///   be written (the disk is full).
    func append(_ piece: ByteBuffer) throws(Failure) {
        guard budget.reserve(piece.readableBytes) else { throw .overBudget }
        count += piece.readableBytes
        // Written at the file's offset, which only these writes move (`sendfile` reads at its own).
        let failure = piece.withUnsafeReadableBytes { bytes -> POSIX.Failure? in
            do throws(POSIX.Failure) {
                try POSIX.writeAll(descriptor, bytes, UnsafeRawBufferPointer(start: nil, count: 0), path: "a request body's file")
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw .io("Could not write a request body to its file: \(failure)") }
    }

    /// The whole body, which owns the file from here.
    func finish() -> SpooledBody {
        defer { descriptor = -1 }
        return SpooledBody(descriptor: descriptor, count: count, budget: budget)
    }
}
