/// The version of the Haneke package, as released and as `haneke --version` prints it.
///
/// It follows semantic versioning: before 1.0.0, a minor version may change the public API, and
/// CHANGELOG.md says how. Between releases the code on the main branch carries the next version
/// with the pre-release label `dev` (`0.4.0-dev`), so a build with unreleased changes never claims
/// to be a release; a release sets ``prerelease`` to `nil` in the commit it tags.
public enum HanekeVersion {
    /// The major version: 0 until the public API is stable.
    public static let major = 0

    /// The minor version: new features, and before 1.0.0 changes to the public API.
    public static let minor = 4

    /// The patch version: fixes only.
    public static let patch = 0

    /// The pre-release label: `"dev"` for the unreleased code between two releases, `nil` in a release.
    public static let prerelease: String? = "dev"

    /// The latest release before this code: the version itself in a release.
    public static let latestRelease = "0.3.0"

    /// Whether this is a released version (no ``prerelease`` label).
    public static var isRelease: Bool { prerelease == nil }

    /// The version as text: `major.minor.patch`, then `-label` for a pre-release (`0.4.0-dev`).
    public static var string: String { "\(major).\(minor).\(patch)" + (prerelease.map { "-" + $0 } ?? "") }

    /// What `haneke --version` prints: ``string``, and for unreleased code which release it follows.
    public static var description: String {
        isRelease ? string : "\(string) (unreleased; the latest release is \(latestRelease))"
    }
}
