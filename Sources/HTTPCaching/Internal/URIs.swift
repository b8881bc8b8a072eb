import Foundation

/// The little URI handling an HTTP cache needs: origins and references resolved against a target.
enum URIs {
    /// `scheme://host:port`, lower-cased, with the scheme's default port made explicit.
    static func origin(of uri: String) -> String? {
        guard let components = URLComponents(string: uri), let scheme = components.scheme?.lowercased(),
              let host = components.host?.lowercased(), !host.isEmpty else { return nil }
        let port = components.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
        return "\(scheme)://\(host):\(port)"
    }

    /// A reference (absolute, or relative to `base`) as an absolute URI.
    static func resolve(_ reference: String, against base: String) -> String? {
        guard let baseURL = URL(string: base), let resolved = URL(string: reference, relativeTo: baseURL) else { return nil }
        return resolved.absoluteString
    }
}
