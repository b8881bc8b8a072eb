public import HanekeProtocols

extension StoreError {
    /// The HTTP status a server answers with when a request failed with this error, as a gateway
    /// would: a value the cache has not and cannot get (`notFound`, and an upstream `404` or `410`)
    /// is the client's status; an upstream that failed or answered with what cannot be used is
    /// `502 Bad Gateway`, one that did not answer in time `504 Gateway Timeout`; a layer that cannot
    /// be used now is `503 Service Unavailable`; everything else is `500`.
    ///
    /// Both framework integrations answer with it, so that an upstream `404` reaches the client as a
    /// `404`, not as a `500`.
    public var httpStatus: Int {
        switch code {
        case .notFound:
            return 404
        case .invalidStatusCode:
            // The upstream's own verdict on the resource stands; its failures are the gateway's.
            switch statusCode {
            case 404, 410: return statusCode ?? 502
            default: return 502
            }
        case .missingData, .decompressionLimitExceeded, .authentication:
            return 502
        case .timeout:
            return 504
        case .unavailable, .outOfMemory:
            return 503
        case .invalidKey, .valueTooLarge:
            return 400
        default:
            return 500
        }
    }

    /// What a server may tell its client of this error: the message for a status under 500 (it
    /// names the key), and only the code otherwise — a failure's message may name the server's
    /// files, which the log keeps.
    public var httpMessage: String {
        httpStatus < 500 ? message : "The cache failed (\(code))"
    }
}
