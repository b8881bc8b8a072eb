/// The version of the Haneke package, as released and as `haneke --version` prints it.
///
/// It follows semantic versioning: before 1.0.0, a minor version may change the public API, and
/// CHANGELOG.md says how.
public enum HanekeVersion {
    /// The major version: 0 until the public API is stable.
    public static let major = 0

    /// The minor version: new features, and before 1.0.0 changes to the public API.
    public static let minor = 3

    /// The patch version: fixes only.
    public static let patch = 0

    /// The version as text, `major.minor.patch`.
    public static var string: String { "\(major).\(minor).\(patch)" }
}
