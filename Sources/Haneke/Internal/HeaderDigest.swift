import Crypto
import HTTPCaching

/// The digest of a request's header fields that `NetworkFetcher.cacheKey(for:headers:)` puts in a
/// key: requests whose fields differ get different keys, and the key shows no field's value.
enum HeaderDigest {
    /// 32 hexadecimal digits: the first 128 bits of the SHA-256 of each field as its name's length,
    /// `:`, the name, its value's length, `:`, the value; names in lower case, sorted by name (the
    /// values of one name in their order). `Cache-Control`
    /// and `Pragma` are left out: they say how to use the cache, not what to fetch.
    static func hex(of headers: HTTPHeaderFields) -> String {
        let canonical = headers.fields.enumerated()
            .filter { !directiveFields.contains($0.element.name.lowercased()) }
            .sorted { ($0.element.name.lowercased(), $0.offset) < ($1.element.name.lowercased(), $1.offset) }
            // Each part with its length: no value can pass for a field boundary.
            .map { field in
                let name = field.element.name.lowercased()
                return "\(name.utf8.count):\(name)\(field.element.value.utf8.count):\(field.element.value)"
            }
            .joined()
        let digest = SHA256.hash(data: Array(canonical.utf8))
        return digest.prefix(16).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The fields that are a request's cache directives.
    static let directiveFields: Set<String> = ["cache-control", "pragma"]

    /// Whether `headers` has a field other than the cache directives.
    static func selectsContent(_ headers: HTTPHeaderFields) -> Bool {
        headers.fields.contains { !directiveFields.contains($0.name.lowercased()) }
    }
}
