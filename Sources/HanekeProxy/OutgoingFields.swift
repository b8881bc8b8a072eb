import HTTPCaching

/// The request fields that make an origin behind a proxy act on another host, scheme, path or
/// method than the request's own (`X-Forwarded-Host`, `X-Original-URL`, `X-HTTP-Method-Override`,
/// …), or tell it who the client is. A client's values are not in the cache key, so the proxy
/// drops them unless the operator trusts or keys them; it writes `X-Forwarded-For` and
/// `Forwarded` itself.
package enum UntrustedFields {
    /// The names, in lower case.
    package static let names: Set<String> = [
        "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port", "x-forwarded-server", "x-forwarded-prefix",
        "x-forwarded-scheme", "x-forwarded-ssl", "x-original-url", "x-rewrite-url", "x-original-host", "x-host",
        "x-http-method-override", "x-http-method", "x-method-override", "x-real-ip", "x-client-ip", "true-client-ip",
        "x-forwarded-for", "forwarded",
    ]
}

/// How a client's request fields become those sent upstream (and recorded with a stored
/// variant): hop-by-hop fields and those `Connection` names dropped; ``UntrustedFields`` dropped
/// unless trusted; the upstream's `Host`; `Via`; `X-Forwarded-For` and `Forwarded` naming the
/// peer (appended to the client's values when trusted); no `Expect`; and for a request that goes
/// without a body, no body framing.
struct OutgoingFields: Sendable {
    /// The `Host` sent: the upstream's authority.
    let authority: String
    /// The fields of ``UntrustedFields`` passed on as the client sent them (lower case).
    let trusted: Set<String>

    /// The fields a lookup of `request` may use in place of ``fields(for:bodiless:)``, without a
    /// copy: the client's own, unless it sent a field the proxy writes itself (`Via`,
    /// `X-Forwarded-For`, `Forwarded`), then `nil`. A stored variant records the fields sent; a
    /// field the rewrite drops, or a `Host` other than the upstream's, can only fail to match it
    /// (the full lookup then decides), while a forged copy of a field the proxy writes could match
    /// another client's variant.
    func fieldsForLookup(of request: ProxyRequest) -> HTTPHeaderFields? {
        for field in request.headers.fields where Self.written.contains(field.name.lowercased()) {
            return nil
        }
        return request.headers
    }

    /// The fields the proxy writes itself, beside `Host`.
    private static let written: Set<String> = ["via", "x-forwarded-for", "forwarded"]

    /// The fields to send for `request`.
    /// - Parameters:
    ///   - request: The client's request.
    ///   - bodiless: Whether it goes without a body (`GET`, `HEAD`).
    /// - Returns: The fields.
    func fields(for request: ProxyRequest, bodiless: Bool) -> HTTPHeaderFields {
        var headers = HTTPCachePolicy.withoutHopByHopFields(request.headers)
        var forwardedFor: [String] = []
        var forwarded: [String] = []
        headers.removeAll { name in
            let lowered = name.lowercased()
            if lowered == "host" || lowered == "expect" { return true }
            if bodiless, lowered == "content-length" || lowered == "transfer-encoding" { return true }
            return UntrustedFields.names.contains(lowered) && !trusted.contains(lowered)
        }
        if trusted.contains("x-forwarded-for") {
            forwardedFor = headers.values(for: "X-Forwarded-For")
            headers.remove(name: "X-Forwarded-For")
        }
        if trusted.contains("forwarded") {
            forwarded = headers.values(for: "Forwarded")
            headers.remove(name: "Forwarded")
        }
        headers.add(name: "Host", value: authority)
        headers.add(name: "Via", value: "1.1 haneke")
        if let peer = request.peer {
            headers.add(name: "X-Forwarded-For", value: (forwardedFor + [peer]).joined(separator: ", "))
            // RFC 7239 §6: an IPv6 address is quoted and bracketed.
            let node = peer.contains(":") ? "\"[\(peer)]\"" : peer
            headers.add(name: "Forwarded", value: (forwarded + ["for=\(node)"]).joined(separator: ", "))
        } else {
            if !forwardedFor.isEmpty { headers.add(name: "X-Forwarded-For", value: forwardedFor.joined(separator: ", ")) }
            if !forwarded.isEmpty { headers.add(name: "Forwarded", value: forwarded.joined(separator: ", ")) }
        }
        return headers
    }
}
