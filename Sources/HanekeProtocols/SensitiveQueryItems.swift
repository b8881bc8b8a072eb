/// The names of the URL query items whose values Haneke hides, as `***`, wherever it shows a URL
/// or a key that is one: in error messages, in log lines, and in what the `haneke` tool prints.
/// One setting for the whole process, read each time a URL is shown.
///
/// It starts as ``defaults``, the common names of tokens, keys, signatures and passwords. Add the
/// names your URLs carry once, at start-up, before the caches are used:
///
/// ```swift
/// SensitiveQueryItems.current.insert("x-partner-token")
/// ```
///
/// The `haneke` tool takes them as `--sensitive-query-item NAME`. A `NetworkFetcher`'s errors hide
/// these and its own `Configuration.sensitiveQueryItems`. The user info of a URL
/// (`alice:S3cr3t@`) is always hidden.
public enum SensitiveQueryItems {
    /// `token`, `access_token`, `refresh_token`, `id_token`, `api_key`, `apikey`, `key`,
    /// `signature`, `sig`, `password`, `passwd`, `pass`, `secret`, `client_secret`, `private_key`,
    /// `credential`, `credentials`, `assertion`, `otp`, `code` (OAuth's), `session`, `sessionid`,
    /// `session_id`, `sid`, `jwt`, `auth`, `authorization`, the `x-amz-` signature, credential and
    /// security token, and the `x-goog-` signature and credential with `googleaccessid`.
    public static var defaults: Set<String> { Redaction.defaultSensitiveQueryItems }

    /// The names hidden now: ``defaults`` until you set others. Compared without regard to case.
    /// Reading and setting it are each atomic; set it at start-up, since every URL shown
    /// afterwards follows it.
    public static var current: Set<String> {
        get { names.withLock { $0 } }
        set {
            let lowercased = Set(newValue.map { $0.lowercased() })
            names.withLock { $0 = lowercased }
        }
    }

    /// The names, in lower case.
    private static let names = Locked(Redaction.defaultSensitiveQueryItems)
}
