import Foundation
import HanekeProtocols

/// Workload 12, slow clients: the resident memory `haneke proxy --memory-budget 64M` and nginx
/// with `proxy_cache` grow by while 12 clients that never read past the head of one cached 32 MiB
/// response and 20 uploads of 15 MB that stop at 14 MB hold their connections, in the same run.
/// nginx's growth is its master's and workers' together; it keeps request bodies past 16 KiB in
/// files (`client_body_buffer_size`) and sends a cached response from its file. Goal: haneke's
/// growth within its budget plus 32 MiB of connections and allocator slack.
enum SlowClientBenchmarks {
    /// The budget the proxy runs with.
    static let budget = 64 << 20

    /// Measures both proxies, nginx first; `ports` are those of nginx and of a haneke proxy started
    /// with ``budget``, both in front of an origin serving `/n/big.bin` and `/h/big.bin`.
    static func measure(nginxPort: Int, nginxPids: @escaping @Sendable () -> [Int32], hanekePort: Int, hanekePid: Int32, bodySize: Int) async throws -> [Row] {
        let theirs = try await growth(port: nginxPort, path: "/n/big.bin", bodySize: bodySize, pids: nginxPids)
        let ours = try await growth(port: hanekePort, path: "/h/big.bin", bodySize: bodySize, pids: { [hanekePid] })
        let limit = Double(budget + (32 << 20)) / 1_048_576
        return [Row(
            workload: "12", name: "proxy under slow clients: resident memory growth", variant: "12 non-reading clients of 32 MiB, 20 uploads stalled at 14 of 15 MB",
            subject: Figure(label: "haneke proxy --memory-budget 64M", value: ours, unit: "MiB"),
            baseline: Figure(label: "nginx proxy_cache", value: theirs, unit: "MiB"),
            ratio: nil, goal: "≤ budget + 32 MiB (\(Int(limit)) MiB)", met: ours <= limit,
            note: "VmRSS after the workload minus before it (nginx: master and workers together)"
        )]
    }

    /// What the processes' resident memory grew by, in MiB, while the slow clients hold their
    /// connections. Blocking sockets, on an I/O executor.
    static func growth(port: Int, path: String, bodySize: Int, pids: @escaping @Sendable () -> [Int32]) async throws -> Double {
        try await IOExecutor.shared.run {
            // Stored, and read once whole, before the start is taken.
            let warm = try Socket(port: port)
            try warm.send("GET \(path) HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
            let read = warm.readToEnd()
            guard read > bodySize else { throw Tools.Failure(message: "GET \(path) on port \(port) returned \(read) bytes, not \(bodySize)") }
            let before = residentBytes(of: pids())
            var held: [Socket] = []
            for _ in 0..<12 {
                let reader = try Socket(port: port, receiveBuffer: 4 << 10)
                try reader.send("GET \(path) HTTP/1.1\r\nHost: bench\r\n\r\n")
                held.append(reader)
            }
            let piece = [UInt8](repeating: 0x62, count: 250_000)
            for _ in 0..<20 {
                let upload = try Socket(port: port)
                try upload.send("POST /upload HTTP/1.1\r\nHost: bench\r\nContent-Length: 15000000\r\n\r\n")
                // Refused uploads (a 503, then a close) end early.
                for _ in 0..<56 where upload.send(piece) {}
                held.append(upload)
            }
            usleep(500_000)   // what is in flight reaches the proxy
            let after = residentBytes(of: pids())
            held.removeAll()
            return Double(after - before) / 1_048_576
        }
    }

    /// The processes' `VmRSS` together, in bytes.
    static func residentBytes(of pids: [Int32]) -> Int {
        pids.reduce(0) { total, pid in
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return total + ((Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) << 10)
        }
    }

    /// nginx's master (from its pid file in `scratch`) and its children.
    static func nginxProcesses(scratch: String) -> [Int32] {
        guard let text = try? String(contentsOfFile: scratch + "/nginx.pid", encoding: .utf8), let master = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return [] }
        let children = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { name -> Int32? in
            guard let pid = Int32(name), let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == master ? pid : nil
        }
        return [master] + children
    }
}

/// A blocking TCP connection to 127.0.0.1, closed when released.
final class Socket {
    let descriptor: Int32

    /// Connects to `port`; with `receiveBuffer`, a receive buffer that small (set before the
    /// connection, so that the window stays small).
    init(port: Int, receiveBuffer: Int32? = nil) throws {
        descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Tools.Failure(message: "socket() failed") }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(descriptor)
            throw Tools.Failure(message: "cannot connect to 127.0.0.1:\(port): errno \(errno)")
        }
    }

    deinit { close(descriptor) }

    /// Sends a text whole.
    func send(_ text: String) throws {
        guard send(Array(text.utf8)) else { throw Tools.Failure(message: "send failed: errno \(errno)") }
    }

    /// Sends bytes whole; `false` once the peer has closed.
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return false }
            sent += count
        }
        return true
    }

    /// Reads until the peer closes; returns the number of bytes.
    func readToEnd() -> Int {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var total = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return total }
            total += count
        }
    }
}
