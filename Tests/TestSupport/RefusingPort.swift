#if canImport(Glibc)
import Glibc
#endif
// NIO's C module declares the socket types too; when the compiler takes them from there, their
// members need its import (MemberImportVisibility).
#if canImport(CNIOLinux)
import CNIOLinux
#endif

/// A loopback TCP port that refuses connections for as long as the value lives: a socket is bound
/// to it and never listens, so no other test's server can be given the port meanwhile (a port
/// whose server has just closed can be, by the next bind to port 0).
public final class RefusingPort: Sendable {
    /// The port on 127.0.0.1.
    public let port: Int
    private let descriptor: Int32

    /// What went wrong taking a port.
    public struct Failure: Error, CustomStringConvertible {
        /// The call that failed, with its errno.
        public var description: String
    }

    /// Binds a socket to a free loopback port.
    /// - Throws: ``Failure`` when the socket cannot be made or bound.
    public init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            close(descriptor)
            throw Failure(description: "bind to 127.0.0.1:0 failed: errno \(code)")
        }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(descriptor)
    }
}
