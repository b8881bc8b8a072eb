import Foundation
import HanekeProtocols
import HanekeTesting
import Logging
import NIOCore
import NIOSSL
@testable import RedisStore
import Testing
import TestSupport

/// RedisStore over TLS: a real redis-server with a TLS port, certificates made at test time.
@Suite(.tags(.redis, .process))
struct TLSTests {
    /// One server with a TLS port (clients need no certificate) for the tests that do not stop it.
    private static let shared = Task { () throws -> RedisTestServer in
        try await RedisTestServer(tls: TLSTestCertificates())
    }

    /// A configuration for `server`'s TLS port, trusting the test authority, in a namespace of its own.
    private static func configuration(_ server: RedisTestServer, _ label: String = "tls") throws -> RedisStore.Configuration {
        var configuration = try RedisStore.Configuration(url: try #require(server.tlsURL), keyPrefix: SharedRedis.uniquePrefix(label))
        configuration.tls?.certificateAuthorityFile = server.certificates?.authority
        configuration.minimumReconnectDelay = .milliseconds(10)
        configuration.maximumReconnectDelay = .milliseconds(100)
        // A handshake's cryptography in a debug build beside a CPU hog may take longer than the
        // default second; these tests are about what fails, not how fast.
        configuration.connectTimeout = .seconds(30)
        return configuration
    }

    /// What reading a key throws, as text, with its code.
    private static func failure(_ configuration: RedisStore.Configuration) async -> (code: StoreError.Code?, text: String) {
        let store = RedisStore(configuration: configuration, logger: .quiet)
        do {
            _ = try await store.value(forKey: "k")
            return (nil, "no error")
        } catch {
            return ((error as? StoreError)?.code, "\(error)")
        }
    }

    @Test func theStoreConformsOverTLS() async throws {
        let server = try await Self.shared.value
        try await StoreConformanceSuite {
            RedisStore(configuration: try Self.configuration(server, "tls-conformance"))
        }.run()
    }

    @Test func aValueWrittenOverTLSIsReadOverPlainTCP() async throws {
        let server = try await Self.shared.value
        let configuration = try Self.configuration(server)
        try await RedisStore(configuration: configuration).setValue(Data("over TLS".utf8), forKey: "k")
        var plain = configuration
        plain.tls = nil
        plain.port = server.port
        #expect(try await RedisStore(configuration: plain).value(forKey: "k") == Data("over TLS".utf8))
    }

    /// Verification is on by default: a server whose certificate another authority signed is
    /// refused, saying so; with verification off it is believed.
    @Test func aServerSignedByAnotherAuthorityIsRefused() async throws {
        let server = try await Self.shared.value
        var untrusted = try Self.configuration(server)
        untrusted.tls?.certificateAuthorityFile = server.certificates?.otherAuthority
        let refused = await Self.failure(untrusted)
        #expect(refused.code == .unavailable)
        #expect(refused.text.contains("could not connect (the TLS handshake failed: CERTIFICATE_VERIFY_FAILED (the server's certificate does not chain to a trusted authority"), "\(refused.text)")
        untrusted.tls?.verification = .none
        #expect(try await RedisStore(configuration: untrusted).value(forKey: "absent") == nil)
    }

    /// A server whose certificate names `localhost` alone: reached at 127.0.0.1 it is refused
    /// unless the configured server name is one the certificate holds (or names are not checked);
    /// each connection sends that name as SNI, never an address.
    @Test func theCertificateMustNameTheServer() async throws {
        let certificates = try await TLSTestCertificates()
        let server = try await Self.scriptedServer(certificate: certificates.namedServerCertificate, key: certificates.namedServerKey)
        defer { Task { await server.shutdown() } }
        func configuration(_ host: String, serverName: String? = nil) throws -> RedisStore.Configuration {
            var configuration = try RedisStore.Configuration(url: "rediss://\(host):\(server.port)")
            configuration.tls?.certificateAuthorityFile = certificates.authority
            configuration.tls?.serverName = serverName
            configuration.connectionCount = 1
            configuration.connectTimeout = .seconds(30)
            return configuration
        }
        let byAddress = await Self.failure(try configuration("127.0.0.1"))
        #expect(byAddress.code == .unavailable)
        #expect(byAddress.text.contains("the TLS handshake failed: the server's certificate does not name the host"), "\(byAddress.text)")
        let misnamed = await Self.failure(try configuration("127.0.0.1", serverName: "cache.example.com"))
        #expect(misnamed.text.contains("does not name the host"), "\(misnamed.text)")
        #expect(try await RedisStore(configuration: configuration("127.0.0.1", serverName: "localhost")).value(forKey: "k") == nil)
        #expect(try await RedisStore(configuration: configuration("localhost")).value(forKey: "k") == nil)
        var unchecked = try configuration("127.0.0.1", serverName: "cache.example.com")
        unchecked.tls?.verification = .skipHostname
        #expect(try await RedisStore(configuration: unchecked).value(forKey: "k") == nil)
        #expect(server.serverNames == [nil, "cache.example.com", "localhost", "localhost", "cache.example.com"])
    }

    /// A server that speaks nothing newer than TLS 1.0 is refused (NIOSSL's client default took
    /// it); the floor can be lowered for one that cannot be upgraded.
    @Test func aServerOfTLS10IsRefusedUnlessTheFloorIsLowered() async throws {
        let certificates = try await TLSTestCertificates()
        let server = try await Self.scriptedServer(certificate: certificates.serverCertificate, key: certificates.serverKey, newest: .tlsv1)
        defer { Task { await server.shutdown() } }
        var configuration = try RedisStore.Configuration(url: "rediss://127.0.0.1:\(server.port)")
        configuration.tls?.certificateAuthorityFile = certificates.authority
        configuration.connectionCount = 1
        configuration.connectTimeout = .seconds(30)
        #expect(configuration.tls?.minimumVersion == .tls1_2)
        let refused = await Self.failure(configuration)
        #expect(refused.code == .unavailable)
        #expect(refused.text.contains("the TLS handshake failed"), "\(refused.text)")
        configuration.tls?.minimumVersion = .tls1_0
        #expect(try await RedisStore(configuration: configuration).value(forKey: "k") == nil)
    }

    /// A scripted Redis over TLS with the given certificate (speaking TLS up to `newest`): `PING`
    /// answered, every key missing.
    private static func scriptedServer(certificate: String, key: String, newest: TLSVersion? = nil) async throws -> ScriptedRedisServer {
        let context = try await offThePool {
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            )
            if let newest {
                configuration.minimumTLSVersion = .tlsv1
                configuration.maximumTLSVersion = newest
            }
            return try NIOSSLContext(configuration: configuration)
        }
        return try await ScriptedRedisServer.start(tls: context) { name, _ in
            name == "PING" ? .bytes("+PONG\r\n") : .bytes("$-1\r\n")
        }
    }

    /// The certificate names `localhost` and `127.0.0.1`: both hosts verify.
    @Test func theCertificateIsCheckedAgainstTheHostNameOrAddress() async throws {
        let server = try await Self.shared.value
        var byName = try Self.configuration(server)
        byName.host = "localhost"
        try await RedisStore(configuration: byName).setValue(Data("by name".utf8), forKey: "k")
        #expect(try await RedisStore(configuration: try Self.configuration(server)).value(forKey: "absent") == nil)
    }

    /// A server that asks for client certificates refuses a client without one and accepts the
    /// one the authority signed.
    @Test func aClientCertificateIsPresentedWhenConfigured() async throws {
        let certificates = try await TLSTestCertificates()
        let server = try await RedisTestServer(tls: certificates, requireClientCertificates: true)
        let anonymous = try Self.configuration(server)
        let refused = await Self.failure(anonymous)
        #expect(refused.code == .unavailable, "\(refused.text)")
        var identified = anonymous
        identified.tls?.certificateFile = certificates.clientCertificate
        identified.tls?.privateKeyFile = certificates.clientKey
        let store = RedisStore(configuration: identified)
        try await store.setValue(Data("with a certificate".utf8), forKey: "k")
        #expect(try await store.value(forKey: "k") == Data("with a certificate".utf8))
    }

    /// Files that cannot be used fail every operation with `invalidConfiguration`, naming them;
    /// no connection is attempted.
    @Test func unusableCertificateFilesAreAnInvalidConfiguration() async throws {
        let server = try await Self.shared.value
        let folder = try TemporaryDirectory(prefix: "tls-files")
        let empty = folder.appending("empty.pem")
        try await offThePool { try Data().write(to: URL(fileURLWithPath: empty)) }
        var cases: [(RedisStore.Configuration, String)] = []
        var missing = try Self.configuration(server)
        missing.tls?.certificateAuthorityFile = folder.appending("missing.pem")
        cases.append((missing, "the certificate authority file \(folder.appending("missing.pem")) could not be read as PEM certificates"))
        var holdsNothing = try Self.configuration(server)
        holdsNothing.tls?.certificateAuthorityFile = empty
        cases.append((holdsNothing, "the certificate authority file \(empty) could not be read as PEM certificates"))
        var keyAlone = try Self.configuration(server)
        keyAlone.tls?.privateKeyFile = server.certificates?.clientKey
        cases.append((keyAlone, "a privateKeyFile was given without its certificateFile"))
        var badKey = try Self.configuration(server)
        badKey.tls?.certificateFile = server.certificates?.clientCertificate
        badKey.tls?.privateKeyFile = empty
        cases.append((badKey, "the private key file \(empty) could not be read as a PEM private key"))
        for (configuration, reason) in cases {
            let store = RedisStore(configuration: configuration, logger: .quiet)
            for _ in 0..<2 {
                await #expect {
                    try await store.setValue(Data(), forKey: "k")
                } throws: { error in
                    (error as? StoreError)?.code == .invalidConfiguration && "\(error)".contains(reason)
                }
            }
            #expect(store.pool.connectionsOpened == 0)
        }
    }

    /// A TLS client on a plain port, and a plain client on the TLS port: each fails, not hangs.
    @Test func aClientAndServerThatDisagreeOnTLSFailClearly() async throws {
        let server = try await Self.shared.value
        var tlsOnPlain = try Self.configuration(server)
        tlsOnPlain.port = server.port
        tlsOnPlain.connectTimeout = .milliseconds(500)
        // Redis reads the client's hello as the start of a command and waits for its end.
        let wrongVersion = await Self.failure(tlsOnPlain)
        #expect(wrongVersion.code == .unavailable)
        #expect(wrongVersion.text.contains("could not connect (no reply within"), "\(wrongVersion.text)")
        var plainOnTLS = try Self.configuration(server)
        plainOnTLS.tls = nil
        plainOnTLS.connectTimeout = .seconds(2)
        let plain = await Self.failure(plainOnTLS)
        #expect(plain.code == .unavailable || plain.code == .timeout, "\(plain.text)")
    }
}
