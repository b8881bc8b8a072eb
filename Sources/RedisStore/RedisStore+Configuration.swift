import Foundation
public import HanekeProtocols
import Logging

extension RedisStore {
    /// Where the Redis server is, how to log in, the namespace of the store's keys, and the
    /// connection policies.
    ///
    /// ```swift
    /// var configuration = try RedisStore.Configuration(url: "redis://cache:s3cret@10.0.0.5:6379/2")
    /// configuration.keyPrefix = "myapp:images:"
    /// configuration.timeToLive = .seconds(24 * 3600)
    /// ```
    ///
    /// A `rediss://` URL, or a ``tls-swift.property``, connects over TLS:
    ///
    /// ```swift
    /// var secure = try RedisStore.Configuration(url: "rediss://cache:s3cret@redis.internal:6380")
    /// secure.tls?.certificateAuthorityFile = "/etc/myapp/redis-ca.pem"
    /// ```
    public struct Configuration: Sendable, Hashable, CustomStringConvertible {
        /// How a connection is secured with TLS: whom to trust, what to present, what name to
        /// check. Certificates are read from PEM files when the store first connects; a file that
        /// cannot be read or used fails every operation with `invalidConfiguration`, naming it.
        public struct TLS: Sendable, Hashable {
            /// How the server's certificate is checked.
            public enum Verification: String, Sendable, Hashable, CaseIterable {
                /// The certificate must chain to a trusted authority and name the server (its host
                /// name, or its IP address when the host is one). The default.
                case full
                /// The certificate must chain to a trusted authority; the name in it is not checked.
                case skipHostname
                /// Nothing is checked: any server is believed. The connection is encrypted but not
                /// authenticated, so anyone on the path can read and change it. For tests only.
                case none
            }

            /// A version of TLS.
            public enum ProtocolVersion: String, Sendable, Hashable, CaseIterable, Comparable {
                /// TLS 1.0 (RFC 2246), deprecated by RFC 8996.
                case tls1_0
                /// TLS 1.1 (RFC 4346), deprecated by RFC 8996.
                case tls1_1
                /// TLS 1.2 (RFC 5246).
                case tls1_2
                /// TLS 1.3 (RFC 8446).
                case tls1_3

                /// Whether `lhs` is older than `rhs`.
                /// - Parameters:
                ///   - lhs: A version.
                ///   - rhs: Another.
                /// - Returns: `true` when `lhs` came first.
                public static func < (lhs: Self, rhs: Self) -> Bool {
                    allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
                }
            }

            /// A PEM file of the certificate authorities to trust; `nil` (the system's trusted
            /// authorities) by default.
            public var certificateAuthorityFile: String?
            /// A PEM file of the certificate (and any intermediates) to present to a server that
            /// asks for one (`tls-auth-clients`); `nil` (none) by default. Needs ``privateKeyFile``.
            public var certificateFile: String?
            /// The PEM file of the private key of ``certificateFile``; `nil` by default.
            public var privateKeyFile: String?
            /// The name sent as SNI and checked against the server's certificate; `nil` (the
            /// configuration's host) by default. With an IP address as host and no name here, no
            /// SNI is sent and the certificate must name that address.
            public var serverName: String?
            /// How the server's certificate is checked; ``Verification/full`` by default.
            public var verification: Verification
            /// ``ProtocolVersion/tls1_2`` by default: the oldest TLS a server may speak; an older
            /// one fails the handshake (RFC 8996 deprecates TLS 1.0 and 1.1). Lower it only for a
            /// server that cannot be upgraded.
            public var minimumVersion: ProtocolVersion

            /// Creates TLS settings.
            /// - Parameters:
            ///   - certificateAuthorityFile: The authorities to trust; `nil` for the system's.
            ///   - certificateFile: A client certificate to present; `nil` for none.
            ///   - privateKeyFile: Its private key; `nil` for none.
            ///   - serverName: The name to send and check; `nil` for the host.
            ///   - verification: How the server's certificate is checked; `.full` by default.
            ///   - minimumVersion: The oldest TLS accepted; TLS 1.2 by default.
            public init(
                certificateAuthorityFile: String? = nil,
                certificateFile: String? = nil,
                privateKeyFile: String? = nil,
                serverName: String? = nil,
                verification: Verification = .full,
                minimumVersion: ProtocolVersion = .tls1_2
            ) {
                self.certificateAuthorityFile = certificateAuthorityFile
                self.certificateFile = certificateFile
                self.privateKeyFile = privateKeyFile
                self.serverName = serverName
                self.verification = verification
                self.minimumVersion = minimumVersion
            }
        }

        /// The server's host name or IP address. `"127.0.0.1"` by default.
        public var host: String
        /// The server's TCP port. `6379` by default.
        public var port: Int
        /// The ACL user to log in as (`AUTH username password`). `nil` (the `default` user) by
        /// default; used only together with a password.
        public var username: String?
        /// The password to log in with (`AUTH`). `nil` (no `AUTH`) by default.
        public var password: String?
        /// The database number selected on every connection (`SELECT`). `0` by default.
        public var database: Int
        /// The store's namespace, which every key it writes starts with. `"haneke:"` by default.
        /// `removeAll()` deletes the keys with this prefix and no others. Give each store a prefix
        /// that does not start another store's; an empty prefix makes the whole database the namespace.
        public var keyPrefix: String
        /// How long a value lives after it is written, at most: an entry with its own expiry
        /// keeps the earlier of the two. `nil` (forever) by default.
        /// Sent as `SET … PX`, rounded up to a millisecond; Redis deletes the value afterwards, and
        /// may evict any value earlier under its own `maxmemory-policy`. Must be positive: with zero
        /// or less, writes throw `invalidConfiguration`.
        public var timeToLive: Duration?
        /// How many connections the store keeps open. `4` by default.
        /// Each carries any number of commands at once (pipelining), so a few are plenty.
        public var connectionCount: Int
        /// How long opening a connection (TCP, then `AUTH`/`SELECT` or `PING`) may take. `1 s` by default.
        public var connectTimeout: Duration
        /// How long a command may wait for its reply. `2 s` by default.
        /// Past it, the command throws `timeout` and its connection is dropped; the commands
        /// behind it on that connection throw `timeout` too, since replies come in order.
        public var commandTimeout: Duration
        /// The wait before trying to connect again after a failed attempt. `100 ms` by default.
        /// It doubles with each failure in a row, up to ``maximumReconnectDelay``, and each wait is
        /// between half and all of that (jitter). While every connection waits to be retried,
        /// operations throw `unavailable` at once.
        public var minimumReconnectDelay: Duration
        /// The longest wait between attempts to connect. `5 s` by default.
        public var maximumReconnectDelay: Duration
        /// How many keys `removeAll()` asks `SCAN` for at a time. `1000` by default.
        /// Each batch found is removed with one `UNLINK`.
        public var scanCount: Int
        /// How many `SCAN` rounds one `removeAll()` may take. `100_000` by default; `nil` for no limit.
        /// Past it, `removeAll()` stops and throws `io`: a server that never ends its scan (never
        /// answers cursor 0) costs a bounded time, not a loop forever. Each round examines about
        /// ``scanCount`` keys of the whole database (`SCAN` walks all of it; `MATCH` filters what
        /// it found), so at the default `scanCount` the default limit is enough for a database of
        /// about 100 million keys. Values below 1 count as 1.
        public var maximumScanRounds: Int?
        /// `64 MiB` by default: the largest value the store writes or reads (its envelope
        /// included), at most ``RedisStore/RedisStore/maximumValueSize`` (Redis's own 512 MiB). A reply larger
        /// than this (and a little room for its framing) is refused as it arrives and its
        /// connection dropped, so each connection holds at most about this much memory for a reply;
        /// a larger write throws `valueTooLarge`.
        public var maximumValueSize: Int
        /// TLS for every connection; `nil` (plain TCP) by default, and set by a `rediss://` URL.
        /// The password of `AUTH` crosses the network in clear without it.
        public var tls: TLS?
        /// For a Redis Cluster: the nodes to learn the cluster's map from (``host`` and ``port``
        /// are asked first, then these); `nil` (a single server) by default. Set by
        /// ``init(clusterURLs:keyPrefix:)``. Every node shares the credentials and TLS settings;
        /// a cluster has database 0 only.
        public var cluster: [ClusterNode]?

        /// A node of a Redis Cluster.
        public struct ClusterNode: Sendable, Hashable {
            /// The node's host name or IP address.
            public var host: String
            /// The node's TCP port.
            public var port: Int

            /// Creates a node's address.
            /// - Parameters:
            ///   - host: The node's host name or IP address.
            ///   - port: The node's TCP port.
            public init(host: String, port: Int) {
                self.host = host
                self.port = port
            }
        }

        /// Creates a configuration.
        /// - Parameters:
        ///   - host: The server's host name or IP address; `"127.0.0.1"` by default.
        ///   - port: The server's TCP port; `6379` by default.
        ///   - username: The ACL user; `nil` by default.
        ///   - password: The password; `nil` (no `AUTH`) by default.
        ///   - database: The database number; `0` by default.
        ///   - keyPrefix: The namespace of the store's keys; `"haneke:"` by default.
        ///   - timeToLive: How long a value lives; `nil` for forever.
        ///   - connectionCount: How many connections to keep open; `4` by default.
        ///   - connectTimeout: How long opening a connection may take; `1 s` by default.
        ///   - commandTimeout: How long a reply may take; `2 s` by default.
        ///   - minimumReconnectDelay: The first wait after a failed attempt; `100 ms` by default.
        ///   - maximumReconnectDelay: The longest wait between attempts; `5 s` by default.
        ///   - scanCount: The batch size of `removeAll()`; `1000` by default.
        ///   - maximumScanRounds: The most `SCAN` rounds of one `removeAll()`; `100_000` by default,
        ///     `nil` for no limit.
        ///   - maximumValueSize: The largest value written or read; `64 MiB` by default.
        ///   - tls: TLS for every connection; `nil` (plain TCP) by default.
        public init(
            host: String = "127.0.0.1",
            port: Int = 6379,
            username: String? = nil,
            password: String? = nil,
            database: Int = 0,
            keyPrefix: String = "haneke:",
            timeToLive: Duration? = nil,
            connectionCount: Int = 4,
            connectTimeout: Duration = .seconds(1),
            commandTimeout: Duration = .seconds(2),
            minimumReconnectDelay: Duration = .milliseconds(100),
            maximumReconnectDelay: Duration = .seconds(5),
            scanCount: Int = 1000,
            maximumScanRounds: Int? = 100_000,
            maximumValueSize: Int = 64 << 20,
            tls: TLS? = nil
        ) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.keyPrefix = keyPrefix
            self.timeToLive = timeToLive
            self.connectionCount = connectionCount
            self.connectTimeout = connectTimeout
            self.commandTimeout = commandTimeout
            self.minimumReconnectDelay = minimumReconnectDelay
            self.maximumReconnectDelay = maximumReconnectDelay
            self.scanCount = scanCount
            self.maximumScanRounds = maximumScanRounds
            self.maximumValueSize = maximumValueSize
            self.tls = tls
        }

        /// Creates a configuration from a URL of the form `redis://[[user]:password@]host[:port][/database]`,
        /// or `rediss://…` for TLS, with the other settings at their defaults.
        ///
        /// `redis://127.0.0.1:6380/2`, `redis://:s3cret@cache.internal` (password only) and
        /// `redis://alice:s3cret@10.0.0.5/1` (ACL user) are all valid; the user and password may be
        /// percent-encoded, and an IPv6 address goes in brackets (`redis://[::1]:6379`).
        /// `rediss://` sets ``tls-swift.property`` to full verification against the system's
        /// trusted authorities; change its fields for others.
        /// - Parameters:
        ///   - url: The server's URL.
        ///   - keyPrefix: The namespace of the store's keys; `"haneke:"` by default.
        /// - Throws: `StoreError` with code `invalidConfiguration` for a URL that is not a valid
        ///   `redis://` or `rediss://` URL, naming what is wrong.
        public init(url: String, keyPrefix: String = "haneke:") throws {
            self.init(keyPrefix: keyPrefix)
            let parsed = try RedisURL(url)
            host = parsed.host
            port = parsed.port
            username = parsed.username
            password = parsed.password
            database = parsed.database
            tls = parsed.secure ? TLS() : nil
        }

        /// Creates a configuration for a Redis Cluster from the URLs of some of its nodes (any of
        /// them: the store learns the others and which serves each key from the first that
        /// answers), with the other settings at their defaults.
        ///
        /// ```swift
        /// let configuration = try RedisStore.Configuration(
        ///     clusterURLs: ["redis://:s3cret@10.0.0.5:7000", "redis://:s3cret@10.0.0.6:7000"], keyPrefix: "myapp:")
        /// ```
        ///
        /// Keys are spread over the cluster's masters by the slot of their whole Redis key (the
        /// prefix, then the key); a prefix with a hash tag (`"{myapp}:"`) puts every key of the
        /// store on one master.
        /// - Parameters:
        ///   - clusterURLs: One URL or more, as for ``init(url:keyPrefix:)``, each without a
        ///     database, and all with the same scheme and credentials.
        ///   - keyPrefix: The namespace of the store's keys; `"haneke:"` by default.
        /// - Throws: `StoreError` with code `invalidConfiguration` for no URL, a URL that is not
        ///   valid, one that names a database, or URLs that differ in scheme or credentials.
        public init(clusterURLs: [String], keyPrefix: String = "haneke:") throws {
            guard let first = clusterURLs.first else {
                throw StoreError(.invalidConfiguration, "A Redis Cluster needs the URL of one node at least; none was given")
            }
            try self.init(url: first, keyPrefix: keyPrefix)
            var nodes: [ClusterNode] = []
            for url in clusterURLs {
                let parsed = try RedisURL(url)
                guard parsed.database == 0 else {
                    throw StoreError(.invalidConfiguration, "Invalid Redis Cluster URL \"\(Logger.describe(RedisURL.redact(url)))\": a cluster has database 0 only")
                }
                guard parsed.secure == (tls != nil), parsed.username == username, parsed.password == password else {
                    throw StoreError(.invalidConfiguration, "Invalid Redis Cluster URL \"\(Logger.describe(RedisURL.redact(url)))\": every node's URL must have the first one's scheme and credentials")
                }
                let node = ClusterNode(host: parsed.host, port: parsed.port)
                if !nodes.contains(node) { nodes.append(node) }
            }
            cluster = nodes
        }

        /// The server's URL, with the password replaced by `***`: `rediss://` when ``tls-swift.property`` is set.
        public var url: String {
            var text = tls == nil ? "redis://" : "rediss://"
            if password != nil {
                text += (username.map(RedisURL.encodeUserInfo) ?? "") + ":***@"
            }
            text += host.contains(":") ? "[\(host)]" : host
            text += ":\(port)/\(database)"
            return text
        }

        /// The URL (password hidden) and the key prefix.
        public var description: String {
            "\(url) (key prefix \"\(keyPrefix)\")"
        }
    }
}

/// The parts of a `redis://` URL.
struct RedisURL {
    var host: String
    var port = 6379
    var username: String?
    var password: String?
    var database = 0
    /// Whether the scheme is `rediss` (TLS).
    var secure = false

    /// The longest URL accepted, in bytes.
    static let longest = 4_096

    init(_ url: String) throws {
        func invalid(_ reason: String) -> StoreError {
            StoreError(.invalidConfiguration, "Invalid Redis URL \"\(Logger.describe(RedisURL.redact(url)))\": \(reason)")
        }
        // Longer than any real URL: refused before it is parsed, and not quoted (a debug build
        // took 0.3 s of CPU to look through 100 KB of it; a cut quote could hold a password).
        guard url.utf8.count <= Self.longest else {
            throw StoreError(
                .invalidConfiguration,
                "Invalid Redis URL: it is \(url.utf8.count) bytes long, more than the \(Self.longest) a Redis URL may take"
            )
        }
        guard let schemeEnd = url.range(of: "://") else {
            throw invalid("expected redis://[[user]:password@]host[:port][/database] or rediss://…")
        }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "redis" || scheme == "rediss" else {
            throw invalid("the scheme must be redis:// or rediss:// (TLS)")
        }
        secure = scheme == "rediss"
        var rest = Substring(url[schemeEnd.upperBound...])
        guard !rest.contains("?"), !rest.contains("#") else {
            throw invalid("query parameters and fragments are not supported")
        }
        // The user and password end at the last @, even when they hold a / (which belongs in
        // percent-encoding): as in `redact`, so that no part of a password is ever read as a port
        // or a database and quoted in an error.
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = userInfo.firstIndex(of: ":") else {
                throw invalid("a user name needs a password (user:password@)")
            }
            guard let user = String(userInfo[..<colon]).removingPercentEncoding,
                  let secret = String(userInfo[userInfo.index(after: colon)...]).removingPercentEncoding else {
                throw invalid("the user or password is not valid percent-encoding")
            }
            username = user.isEmpty ? nil : user
            password = secret
        }
        let path: Substring
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        } else {
            path = ""
        }
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw invalid("an IPv6 address is missing its ]") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("unexpected text after the IPv6 address") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = String(rest[..<colon])
            portText = rest[rest.index(after: colon)...]
        } else {
            host = String(rest)
        }
        guard !host.isEmpty else { throw invalid("the host is missing") }
        if let portText {
            guard let number = Int(portText), (1...65_535).contains(number) else {
                throw invalid("the port \"\(Logger.describe(portText))\" is not a number from 1 to 65535")
            }
            port = number
        }
        if !path.isEmpty {
            guard let number = Int(path), number >= 0 else {
                throw invalid("the database \"\(Logger.describe(path))\" is not a number of 0 or more")
            }
            database = number
        }
    }

    /// The URL with any password replaced by `***`, for error messages; user information without
    /// a colon (a password given without its `:`, perhaps) is all replaced.
    static func redact(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://"),
              let at = url[schemeEnd.upperBound...].lastIndex(of: "@") else { return url }
        let userInfo = url[schemeEnd.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else {
            return String(url[..<userInfo.startIndex]) + "***" + String(url[at...])
        }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }

    static func encodeUserInfo(_ text: String) -> String {
        var allowed = CharacterSet.urlUserAllowed
        allowed.remove(charactersIn: ":@/")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

extension StoreError.Code {
    /// A store's configuration cannot be used: an invalid Redis URL.
    public static let invalidConfiguration = StoreError.Code("invalidConfiguration")
}

extension RedisStore.Configuration {
    /// ``maximumValueSize`` within what Redis accepts, and at least 1 KiB.
    var effectiveMaximumValueSize: Int {
        min(max(maximumValueSize, 1 << 10), RedisStore.maximumValueSize)
    }
}
