import HanekeProtocols
import NIOCore
import NIOSSL
import Synchronization

extension RedisStore.Configuration.TLS {
    /// The TLS context these settings describe, with their certificate files read and checked.
    /// Reads files (and, without a certificate authority file, the system's trusted authorities):
    /// an executor's job, never a cooperative thread's.
    /// - Throws: `RedisClientError.invalidTLSConfiguration`, naming the file and what is wrong.
    func makeContext() throws(RedisClientError) -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = switch minimumVersion {
        case .tls1_0: .tlsv1
        case .tls1_1: .tlsv11
        case .tls1_2: .tlsv12
        case .tls1_3: .tlsv13
        }
        configuration.certificateVerification = switch verification {
        case .full: .fullVerification
        case .skipHostname: .noHostnameVerification
        case .none: .none
        }
        if let file = certificateAuthorityFile {
            configuration.trustRoots = .certificates(try Self.certificates(in: file, what: "certificate authority file"))
        }
        switch (certificateFile, privateKeyFile) {
        case (nil, nil):
            break
        case (let certificateFile?, let privateKeyFile?):
            configuration.certificateChain = try Self.certificates(in: certificateFile, what: "certificate file").map { .certificate($0) }
            do {
                configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: privateKeyFile, format: .pem))
            } catch {
                throw .invalidTLSConfiguration("the private key file \(privateKeyFile) could not be read as a PEM private key (\(error))")
            }
        case (nil, _?):
            throw .invalidTLSConfiguration("a privateKeyFile was given without its certificateFile")
        case (_?, nil):
            throw .invalidTLSConfiguration("a certificateFile was given without its privateKeyFile")
        }
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw .invalidTLSConfiguration("the TLS settings could not be used (\(error))")
        }
    }

    /// The contexts made so far, by their settings: every pool of a store, every node of a cluster
    /// and every store with the same settings share one, so the trust roots are read once. A
    /// context that could not be made is not kept (a file may be fixed meanwhile).
    private static let made = Mutex<[Self: NIOSSLContext]>([:])

    /// The context of these settings: the one made before, or a new one (``makeContext()``).
    /// Reads files the first time: an executor's job.
    func sharedContext() throws(RedisClientError) -> NIOSSLContext {
        if let context = Self.made.withLock({ $0[self] }) { return context }
        let context = try makeContext()
        return Self.made.withLock { made in
            if let earlier = made[self] { return earlier }
            made[self] = context
            return context
        }
    }

    /// The name sent as SNI and checked against the certificate, for a connection to `host`:
    /// ``serverName``, else the host unless it is an IP address (whose certificate is checked
    /// against the address itself; SNI never carries an address).
    func serverHostname(connectingTo host: String) -> String? {
        if let serverName { return serverName }
        return (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
    }

    /// The certificates of a PEM file: at least one, or an error naming the file.
    private static func certificates(in file: String, what: String) throws(RedisClientError) -> [NIOSSLCertificate] {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(file)
        } catch {
            throw .invalidTLSConfiguration("the \(what) \(file) could not be read as PEM certificates (\(error))")
        }
        guard !certificates.isEmpty else { throw .invalidTLSConfiguration("the \(what) \(file) holds no PEM certificate") }
        return certificates
    }
}
