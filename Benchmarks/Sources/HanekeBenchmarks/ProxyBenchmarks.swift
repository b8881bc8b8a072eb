import Foundation
import HanekeProtocols

/// Workload 12: the hit path of `haneke proxy` against Debian's nginx with `proxy_cache`, in the
/// same run, both on loopback in front of one origin (nginx serving two files with
/// `Cache-Control: max-age=3600`; `tcp_nopush` is left off, as with it nginx answered one
/// 64 KiB request per 40 ms over one connection), measured by wrk: cached 4 KiB and 64 KiB responses over 1 and 64
/// connections, rounds alternating between the two proxies. Goals: at least 0.8× nginx's
/// requests per second, and a p99 at most 2× nginx's. Then the slow clients of
/// ``SlowClientBenchmarks``, against a second haneke proxy with a budget of bytes in flight.
enum ProxyBenchmarks {
    static func run(_ scale: Scale) async throws -> [Row] {
        let nginx = try Tools.require("/usr/sbin/nginx", package: "nginx-light")
        let wrk = try Tools.require("/usr/bin/wrk", package: "wrk")
        // The tool as this package builds it, beside the benchmarks (`swift build --product haneke`).
        let haneke = Tools.sibling("haneke")
        guard FileManager.default.isExecutableFile(atPath: haneke) else {
            throw Tools.Failure(message: "\(haneke) is missing: `swift build -c release --product haneke` in Benchmarks builds it (make bench does)")
        }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("haneke-bench-proxy-\(getpid())").path
        let ports = (origin: try freePort(), nginx: try freePort(), haneke: try freePort(), budgeted: try freePort())
        var proxy: HanekeProxyProcess?
        var budgeted: HanekeProxyProcess?
        // Stopping both proxies and removing the folder wait for the system: off the cooperative pool.
        func cleanUp() async {
            _ = try? await IOExecutor.shared.run { [proxy, budgeted] in
                proxy?.stop()
                budgeted?.stop()
                stopNginx(nginx, scratch: scratch)
                try? FileManager.default.removeItem(atPath: scratch)
            }
        }
        do {
            try FileManager.default.createDirectory(atPath: scratch + "/www", withIntermediateDirectories: true)
            var random = SystemRandomNumberGenerator()
            for (name, size) in [("4k.bin", 4 << 10), ("64k.bin", 64 << 10), ("big.bin", 32 << 20)] {
                try Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }).write(to: URL(fileURLWithPath: scratch + "/www/" + name))
            }
            try nginxConfiguration(scratch: scratch, origin: ports.origin, cache: ports.nginx).write(toFile: scratch + "/nginx.conf", atomically: true, encoding: .utf8)
            try await Spawn.run(nginx, ["-p", scratch + "/", "-c", scratch + "/nginx.conf"]).check("nginx")
            proxy = try await HanekeProxyProcess.start(
                haneke, ["proxy", "--upstream", "http://127.0.0.1:\(ports.origin)", "--listen", "127.0.0.1:\(ports.haneke)", "--dir", scratch + "/haneke-cache", "--capacity", "256M"]
            )
            budgeted = try await HanekeProxyProcess.start(haneke, [
                "proxy", "--upstream", "http://127.0.0.1:\(ports.origin)", "--listen", "127.0.0.1:\(ports.budgeted)", "--dir", scratch + "/haneke-budgeted",
                "--capacity", "1G", "--memory-budget", String(SlowClientBenchmarks.budget),
            ])
            try await waitForPort(ports.nginx)
            var rows = try await measure(scale, wrk: wrk, nginxPort: ports.nginx, hanekePort: ports.haneke, scratch: scratch)
            rows += try await SlowClientBenchmarks.measure(
                nginxPort: ports.nginx, nginxPids: { SlowClientBenchmarks.nginxProcesses(scratch: scratch) },
                hanekePort: ports.budgeted, hanekePid: budgeted!.pid, bodySize: 32 << 20
            )
            await cleanUp()
            return rows
        } catch {
            await cleanUp()
            throw error
        }
    }

    /// The rounds of wrk against both proxies, warmed first, and the origin's log checked.
    static func measure(_ scale: Scale, wrk: String, nginxPort: Int, hanekePort: Int, scratch: String) async throws -> [Row] {
        let seconds = scale.smoke ? 1 : 5
        let rounds = scale.smoke ? 1 : 3
        var rows: [Row] = []
        for file in ["4k.bin", "64k.bin"] {
            // Warm both caches: the first request of each misses, and is stored.
            _ = try await Wrk.run(wrk, url: "http://127.0.0.1:\(nginxPort)/n/\(file)", connections: 1, seconds: 1)
            _ = try await Wrk.run(wrk, url: "http://127.0.0.1:\(hanekePort)/h/\(file)", connections: 1, seconds: 1)
            for connections in [1, 64] {
                var ours: [Wrk.Result] = [], theirs: [Wrk.Result] = []
                for _ in 0..<rounds {
                    theirs.append(try await Wrk.run(wrk, url: "http://127.0.0.1:\(nginxPort)/n/\(file)", connections: connections, seconds: seconds))
                    ours.append(try await Wrk.run(wrk, url: "http://127.0.0.1:\(hanekePort)/h/\(file)", connections: connections, seconds: seconds))
                }
                let rate = median(ours.map(\.requestsPerSecond)), baselineRate = median(theirs.map(\.requestsPerSecond))
                let p99 = median(ours.map(\.p99Milliseconds)), baselineP99 = median(theirs.map(\.p99Milliseconds))
                let variant = "\(file == "4k.bin" ? "4 KiB" : "64 KiB"), \(connections) connection\(connections == 1 ? "" : "s")"
                let errors = (ours + theirs).reduce(0) { $0 + $1.errors }
                rows.append(Row(
                    workload: "12", name: "proxy hit: requests/s", variant: variant,
                    subject: Figure(label: "haneke proxy", value: rate, unit: "ops/s"),
                    baseline: Figure(label: "nginx proxy_cache", value: baselineRate, unit: "ops/s"),
                    ratio: rate / baselineRate, goal: "≥ 0.8× nginx", met: rate >= 0.8 * baselineRate && errors == 0,
                    note: "wrk, \(seconds) s × \(rounds) rounds each, medians; non-2xx or socket errors: \(errors)"
                ))
                rows.append(Row(
                    workload: "12", name: "proxy hit: p99", variant: variant,
                    subject: Figure(label: "haneke proxy", value: p99, unit: "ms"),
                    baseline: Figure(label: "nginx proxy_cache", value: baselineP99, unit: "ms"),
                    ratio: baselineP99 / p99, goal: "p99 ≤ 2× nginx", met: p99 <= 2 * baselineP99,
                    note: String(format: "p99 / nginx's = %.2f", p99 / baselineP99)
                ))
            }
        }
        // Both proxies must have served from their caches: the origin saw each file a few times only.
        let log = (try? String(contentsOfFile: scratch + "/origin.log", encoding: .utf8)) ?? ""
        let fetched = (nginx: log.components(separatedBy: " /n/").count - 1, haneke: log.components(separatedBy: " /h/").count - 1)
        for index in rows.indices {
            rows[index].note = (rows[index].note ?? "") + "; origin requests: nginx \(fetched.nginx), haneke \(fetched.haneke)"
            if fetched.haneke > 4 || fetched.nginx > 4 { rows[index].met = false }
        }
        return rows
    }

    static func nginxConfiguration(scratch: String, origin: Int, cache: Int) -> String {
        nginxFile(scratch: scratch, workers: "auto", connections: 4096, http: """
            tcp_nodelay on;
            proxy_cache_path \(scratch)/nginx-cache levels=1:2 keys_zone=bench:16m max_size=256m inactive=600m;
            upstream origin { server 127.0.0.1:\(origin); keepalive 64; }
            server {
                listen 127.0.0.1:\(origin);
                access_log \(scratch)/origin.log;
                location /n/ { alias \(scratch)/www/; add_header Cache-Control "max-age=3600"; }
                location /h/ { alias \(scratch)/www/; add_header Cache-Control "max-age=3600"; }
            }
            server {
                listen 127.0.0.1:\(cache);
                client_max_body_size 16m;
                location / {
                    proxy_pass http://origin;
                    proxy_cache bench;
                    proxy_http_version 1.1;
                    proxy_set_header Connection "";
                }
            }
            """)
    }

    /// Stops the nginx running from `scratch` (as `nginxFile` configures it) and waits up to 5 s
    /// for it to exit. `-s stop` only signals nginx: its folder may be removed once its pid file is
    /// gone, else the removal races its workers and leaves files behind. Blocks: call it on an
    /// I/O executor.
    static func stopNginx(_ nginx: String, scratch: String) {
        guard Tools.succeeds([nginx, "-p", scratch + "/", "-c", scratch + "/nginx.conf", "-s", "stop"]) else { return }
        for _ in 0..<500 where FileManager.default.fileExists(atPath: scratch + "/nginx.pid") { usleep(10_000) }
    }

    /// An nginx configuration that keeps every file it writes in `scratch` (its pid, its log, its
    /// temporary files), runs as root when we are root, sends files with `sendfile` and logs no
    /// access unless told; `http` holds the rest of the `http` block.
    static func nginxFile(scratch: String, workers: String, connections: Int, http: String) -> String {
        """
        \(geteuid() == 0 ? "user root;" : "")
        worker_processes \(workers);
        pid \(scratch)/nginx.pid;
        error_log \(scratch)/error.log;
        events { worker_connections \(connections); }
        http {
            sendfile on;
            access_log off;
            client_body_temp_path \(scratch)/client_body;
            proxy_temp_path \(scratch)/proxy_temp;
            fastcgi_temp_path \(scratch)/fastcgi;
            uwsgi_temp_path \(scratch)/uwsgi;
            scgi_temp_path \(scratch)/scgi;
        \(http)
        }
        """
    }

    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Tools.Failure(message: "socket() failed") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        guard bound else { throw Tools.Failure(message: "no free port on 127.0.0.1") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Waits (up to 10 s) until something accepts connections on `port`.
    static func waitForPort(_ port: Int) async throws {
        for _ in 0..<200 {
            let accepted = try await IOExecutor.shared.run { (try? Socket(port: port)) != nil }
            if accepted { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Tools.Failure(message: "nothing listens on 127.0.0.1:\(port)")
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }
}

/// `haneke proxy` in a child process, ready once it printed its line.
final class HanekeProxyProcess: Sendable {
    private let process: Process

    private init(process: Process) { self.process = process }

    /// The process's identifier.
    var pid: Int32 { process.processIdentifier }

    static func start(_ program: String, _ arguments: [String]) async throws -> HanekeProxyProcess {
        try await IOExecutor.shared.run {
            let (process, output) = try Tools.launch(program, arguments)
            // The first line says it listens (or nothing arrives: it failed).
            var line = Data()
            while !line.contains(UInt8(ascii: "\n")) {
                let piece = output.fileHandleForReading.availableData
                if piece.isEmpty { throw Tools.Failure(message: "haneke proxy ended before it listened") }
                line.append(piece)
            }
            return HanekeProxyProcess(process: process)
        }
    }

    /// Ends the proxy and waits for it. Blocks: call it off the cooperative pool.
    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

/// wrk, run in a child process, and what it printed.
enum Wrk {
    struct Result: Sendable {
        var requestsPerSecond: Double
        var p99Milliseconds: Double
        var errors: Int
    }

    static func run(_ wrk: String, url: String, connections: Int, seconds: Int) async throws -> Result {
        let text = try await IOExecutor.shared.run { () -> String in
            let (_, data) = try Tools.output(wrk, ["-t", String(min(2, connections)), "-c", String(connections), "-d", "\(seconds)s", "--latency", url])
            return String(decoding: data, as: UTF8.self)
        }
        return try parse(text, url: url)
    }

    static func parse(_ text: String, url: String) throws -> Result {
        var rate: Double?, p99: Double?, errors = 0
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            if line.hasPrefix("Requests/sec:"), let value = words.last.flatMap({ Double($0) }) { rate = value }
            if words.first == "99%", let value = words.last { p99 = milliseconds(String(value)) }
            if line.contains("Non-2xx or 3xx responses:"), let value = words.last.flatMap({ Int($0) }) { errors += value }
            if line.contains("Socket errors:") {
                errors += line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }.reduce(0, +)
            }
        }
        guard let rate, let p99 else { throw Tools.Failure(message: "wrk printed no rate or p99 for \(url):\n\(text)") }
        return Result(requestsPerSecond: rate, p99Milliseconds: p99, errors: errors)
    }

    /// `1.23ms`, `456.00us`, `1.02s` in milliseconds.
    static func milliseconds(_ text: String) -> Double? {
        for (suffix, scale) in [("us", 0.001), ("ms", 1.0), ("s", 1_000.0)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * scale }
        }
        return nil
    }
}
