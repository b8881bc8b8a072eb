extension CompressedStore {
    /// How values are compressed: one type for every base store (`CompressionConfiguration`).
    public typealias Configuration = CompressionConfiguration
    /// The largest block of an LZ4 frame.
    public typealias BlockSize = CompressionConfiguration.BlockSize
}

/// How values are compressed, and how large a value may decompress to: the configuration of every
/// `CompressedStore`, whatever its base store, and of `LZ4Frame.compress(_:configuration:)`.
public struct CompressionConfiguration: Sendable, Hashable {
    /// The compression level. `.fast` (liblz4's default, about 650–750 MB/s here) by default.
    public var level: CompressionLevel
    /// The largest block of the frame. `.kilobytes64` by default: cache values are mostly small,
    /// and a small block keeps liblz4's working memory small.
    public var blockSize: BlockSize
    /// Whether blocks may refer to earlier blocks (better ratio on values over one block).
    /// `true` by default, as for the `lz4` tool.
    public var linkedBlocks: Bool
    /// The most bytes a stored value may decompress to: `64 MiB` by default. A frame that claims
    /// more is refused with `decompressionLimitExceeded` before any memory is allocated for it,
    /// so a damaged or hostile file cannot make a read allocate gigabytes.
    public var decompressionLimit: Int

    /// Creates a configuration.
    /// - Parameters:
    ///   - level: The compression level; `.fast` by default.
    ///   - blockSize: The largest block; 64 KiB by default.
    ///   - linkedBlocks: Whether blocks may refer to earlier blocks; `true` by default.
    ///   - decompressionLimit: The most bytes a value may decompress to; 64 MiB by default.
    public init(
        level: CompressionLevel = .fast,
        blockSize: BlockSize = .kilobytes64,
        linkedBlocks: Bool = true,
        decompressionLimit: Int = 64 << 20
    ) {
        self.level = level
        self.blockSize = blockSize
        self.linkedBlocks = linkedBlocks
        self.decompressionLimit = decompressionLimit
    }

    /// The largest block of an LZ4 frame.
    public enum BlockSize: Int32, Sendable, Hashable, CaseIterable {
        /// 64 KiB blocks.
        case kilobytes64 = 4
        /// 256 KiB blocks.
        case kilobytes256 = 5
        /// 1 MiB blocks.
        case megabyte1 = 6
        /// 4 MiB blocks (the `lz4` tool's default).
        case megabytes4 = 7
    }
}

/// An LZ4 compression level: the fast compressor (optionally accelerated) or the high-compression one.
public struct CompressionLevel: Sendable, Hashable, CustomStringConvertible {
    /// liblz4's level number: negative for acceleration, 0–2 for the fast compressor, 3–12 for HC.
    public let rawValue: Int32

    private init(rawValue: Int32) { self.rawValue = rawValue }

    /// The fast compressor: liblz4's default.
    public static let fast = CompressionLevel(rawValue: 0)
    /// The high-compression compressor at liblz4's default HC level (9): slower to write, a better
    /// ratio, and just as fast to read.
    public static let high = CompressionLevel(rawValue: 9)
    /// The high-compression compressor at its best ratio (level 12).
    public static let maximum = CompressionLevel(rawValue: 12)

    /// The fast compressor trading ratio for speed.
    /// - Parameter factor: 1 (no acceleration) to 65,537 (fastest, least compression).
    /// - Returns: The level.
    public static func accelerated(_ factor: Int) -> CompressionLevel {
        CompressionLevel(rawValue: -Int32(min(max(factor, 1), 65_537)))
    }

    /// The high-compression compressor at a chosen level.
    /// - Parameter level: 3 to 12; clamped to that range.
    /// - Returns: The level.
    public static func high(_ level: Int) -> CompressionLevel {
        CompressionLevel(rawValue: Int32(min(max(level, 3), 12)))
    }

    /// `"fast"`, `"accelerated(n)"` or `"high(n)"`.
    public var description: String {
        // The factories above make only these: 0, -1 through -65,537, and 3 through 12.
        switch rawValue {
        case ..<0: "accelerated(\(-rawValue))"
        case 0: "fast"
        default: "high(\(rawValue))"
        }
    }
}
