import Foundation
import HanekeProtocols

/// Certificates for TLS tests, made at test time with the `openssl` tool (Debian's package
/// `openssl`) in a temporary folder: a certificate authority, a server certificate it signed for
/// `localhost` and `127.0.0.1` and one for `localhost` alone, a client certificate it signed, and a
/// second authority that signed nothing here (a client that trusts only it must refuse the
/// server). Keys are P-256; every
/// certificate is valid for two days.
///
/// ```swift
/// let certificates = try await TLSTestCertificates()
/// let server = try await RedisTestServer(tls: certificates)
/// var configuration = try RedisStore.Configuration(url: server.tlsURL!)
/// configuration.tls?.certificateAuthorityFile = certificates.authority
/// ```
public final class TLSTestCertificates: Sendable {
    /// The folder the files are in; removed when the value is released.
    public let directory: TemporaryDirectory

    /// The authority's certificate (PEM): what a client trusts.
    public var authority: String { directory.appending("ca.crt") }
    /// The server's certificate (PEM), for `localhost` and `127.0.0.1`.
    public var serverCertificate: String { directory.appending("server.crt") }
    /// The server's private key (PEM).
    public var serverKey: String { directory.appending("server.key") }
    /// A client certificate (PEM) the authority signed.
    public var clientCertificate: String { directory.appending("client.crt") }
    /// The client certificate's private key (PEM).
    public var clientKey: String { directory.appending("client.key") }
    /// A second server certificate (PEM) the authority signed, naming `localhost` only (no address).
    public var namedServerCertificate: String { directory.appending("named-server.crt") }
    /// Its private key (PEM).
    public var namedServerKey: String { directory.appending("named-server.key") }
    /// Another authority's certificate (PEM), which signed nothing here.
    public var otherAuthority: String { directory.appending("other-ca.crt") }

    /// Makes the certificates; `openssl` runs on the I/O executor, never on a cooperative thread.
    /// - Throws: `RedisTestServer.Failure` when `openssl` is missing or fails, with its output.
    public init() async throws {
        let directory = try TemporaryDirectory(prefix: "haneke-tls")
        self.directory = directory
        let openssl = try RedisTestServer.executable(named: "openssl")
        try await IOExecutor.shared.run {
            let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"]
            let authority = ["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]
            let signed = ["-CA", "ca.crt", "-CAkey", "ca.key", "-addext", "basicConstraints=critical,CA:FALSE"]
            let commands: [[String]] = [
                ["req", "-x509"] + key + ["-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=Haneke test CA"] + authority,
                ["req", "-x509"] + key + ["-keyout", "other-ca.key", "-out", "other-ca.crt", "-subj", "/CN=Another test CA"] + authority,
                ["req", "-x509"] + key + signed + [
                    "-keyout", "server.key", "-out", "server.crt", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-addext", "extendedKeyUsage=serverAuth",
                ],
                ["req", "-x509"] + key + signed + [
                    "-keyout", "named-server.key", "-out", "named-server.crt", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost", "-addext", "extendedKeyUsage=serverAuth",
                ],
                ["req", "-x509"] + key + signed + [
                    "-keyout", "client.key", "-out", "client.crt", "-subj", "/CN=haneke-test-client",
                    "-addext", "extendedKeyUsage=clientAuth",
                ],
            ]
            for arguments in commands {
                _ = try runTool(openssl, arguments, in: directory.path)
            }
        }
    }

}
