/// The size a resize gives one image, and whether it crops: arithmetic only, with HanekeSwift's
/// rules (sizes rounded up, and without upscaling an image that would grow is kept as it is).
struct ResizePlan: Hashable {
    /// The output's size, upright.
    var size: ImageSize
    /// Whether the image is scaled to cover ``size`` and its centre cut out (aspect fill).
    var crops: Bool

    /// The plan for an image of `source` pixels (upright).
    init(source: ImageSize, target: ImageSize, scaleMode: ImageResizer.ScaleMode, allowUpscaling: Bool) {
        let scaled: ImageSize
        switch scaleMode {
        case .none:
            self.init(size: source, crops: false)
            return
        case .fill:
            scaled = target
        case .aspectFit:
            scaled = Self.fit(source, in: target)
        case .aspectFill:
            scaled = Self.cover(target, with: source)
        }
        if !allowUpscaling, scaled.width > source.width || scaled.height > source.height {
            self.init(size: source, crops: false)
        } else if scaleMode == .aspectFill {
            self.init(size: target, crops: scaled != target)
        } else {
            self.init(size: scaled, crops: false)
        }
    }

    init(size: ImageSize, crops: Bool) {
        self.size = size
        self.crops = crops
    }

    /// The largest size of `source`'s aspect that fits in `box`, rounded up.
    static func fit(_ source: ImageSize, in box: ImageSize) -> ImageSize {
        if box.width * source.height > source.width * box.height {
            // The box is wider than the image: its height decides.
            return ImageSize(width: divideRoundingUp(box.height * source.width, source.height), height: box.height)
        }
        return ImageSize(width: box.width, height: divideRoundingUp(box.width * source.height, source.width))
    }

    /// The smallest size of `source`'s aspect that covers `box`, rounded up.
    static func cover(_ box: ImageSize, with source: ImageSize) -> ImageSize {
        if box.width * source.height > source.width * box.height {
            // The box is wider than the image: its width decides.
            return ImageSize(width: box.width, height: divideRoundingUp(box.width * source.height, source.width))
        }
        return ImageSize(width: divideRoundingUp(box.height * source.width, source.height), height: box.height)
    }

    /// `numerator / denominator` rounded up, and at least 1 (both are positive).
    private static func divideRoundingUp(_ numerator: Int, _ denominator: Int) -> Int {
        max(1, (numerator + denominator - 1) / denominator)
    }
}
