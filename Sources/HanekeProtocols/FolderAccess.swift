/// Who may read and write the files of a store's folder (a `FileStore`'s, an `SQLiteStore`'s, or
/// both sharing one folder).
///
/// `FileStore.Access` is another name for this type.
public enum FolderAccess: Sendable, Hashable {
    /// Only the user running the process: folders `0700`, files `0600`. The default: cached
    /// values and their keys (often URLs with tokens) are nobody else's business.
    case owner
    /// The user and the folder's group: folders `2770` (new files take the folder's group),
    /// files `0660`, and a group-writable folder is accepted. For a cache shared by the
    /// services of one group.
    case ownerAndGroup
}
