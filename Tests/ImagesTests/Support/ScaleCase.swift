import Images
import Testing

/// One row of the scale-mode table: an image of some size, a resizer's target, mode and upscaling
/// rule, and the size that must come out (and whether it is a centre crop).
struct ScaleCase: Sendable, CustomTestStringConvertible {
    var input: ImageSize
    var target: ImageSize
    var mode: ImageResizer.ScaleMode
    var allowUpscaling: Bool
    var expected: ImageSize
    var crops = false

    var testDescription: String {
        "\(input) → \(mode) \(target)\(allowUpscaling ? "" : " without upscaling") = \(expected)\(crops ? " (cropped)" : "")"
    }

    static let landscape = ImageSize(width: 400, height: 200)
    static let portrait = ImageSize(width: 200, height: 400)
    static let square = ImageSize(width: 300, height: 300)
    /// Smaller than every input, and wider than tall (3:2).
    static let small = ImageSize(width: 120, height: 80)
    /// Larger than every input (4:3).
    static let large = ImageSize(width: 600, height: 450)

    /// Every scale mode on a landscape, a portrait and a square image, shrinking and growing, with
    /// and without upscaling. Worked by hand: aspect sizes round up, as HanekeSwift's did; an image
    /// that would grow without upscaling allowed keeps its own size, uncropped.
    static let table: [ScaleCase] = {
        var rows: [ScaleCase] = []
        for allowUpscaling in [true, false] {
            // Shrinking to 120×80: upscaling never comes into it.
            rows += [
                ScaleCase(input: landscape, target: small, mode: .fill, allowUpscaling: allowUpscaling, expected: small),
                ScaleCase(input: portrait, target: small, mode: .fill, allowUpscaling: allowUpscaling, expected: small),
                ScaleCase(input: square, target: small, mode: .fill, allowUpscaling: allowUpscaling, expected: small),
                // 2:1 in 3:2 — the width decides; 1:2 and 1:1 — the height does.
                ScaleCase(input: landscape, target: small, mode: .aspectFit, allowUpscaling: allowUpscaling, expected: .init(width: 120, height: 60)),
                ScaleCase(input: portrait, target: small, mode: .aspectFit, allowUpscaling: allowUpscaling, expected: .init(width: 40, height: 80)),
                ScaleCase(input: square, target: small, mode: .aspectFit, allowUpscaling: allowUpscaling, expected: .init(width: 80, height: 80)),
                // Covered at 160×80, 120×240 and 120×120, then cut to the target.
                ScaleCase(input: landscape, target: small, mode: .aspectFill, allowUpscaling: allowUpscaling, expected: small, crops: true),
                ScaleCase(input: portrait, target: small, mode: .aspectFill, allowUpscaling: allowUpscaling, expected: small, crops: true),
                ScaleCase(input: square, target: small, mode: .aspectFill, allowUpscaling: allowUpscaling, expected: small, crops: true),
                ScaleCase(input: landscape, target: small, mode: .none, allowUpscaling: allowUpscaling, expected: landscape),
                ScaleCase(input: portrait, target: small, mode: .none, allowUpscaling: allowUpscaling, expected: portrait),
                ScaleCase(input: square, target: small, mode: .none, allowUpscaling: allowUpscaling, expected: square),
            ]
        }
        // Growing to 600×450.
        rows += [
            ScaleCase(input: landscape, target: large, mode: .fill, allowUpscaling: true, expected: large),
            ScaleCase(input: portrait, target: large, mode: .fill, allowUpscaling: true, expected: large),
            ScaleCase(input: square, target: large, mode: .fill, allowUpscaling: true, expected: large),
            ScaleCase(input: landscape, target: large, mode: .aspectFit, allowUpscaling: true, expected: .init(width: 600, height: 300)),
            ScaleCase(input: portrait, target: large, mode: .aspectFit, allowUpscaling: true, expected: .init(width: 225, height: 450)),
            ScaleCase(input: square, target: large, mode: .aspectFit, allowUpscaling: true, expected: .init(width: 450, height: 450)),
            ScaleCase(input: landscape, target: large, mode: .aspectFill, allowUpscaling: true, expected: large, crops: true),
            ScaleCase(input: portrait, target: large, mode: .aspectFill, allowUpscaling: true, expected: large, crops: true),
            ScaleCase(input: square, target: large, mode: .aspectFill, allowUpscaling: true, expected: large, crops: true),
            ScaleCase(input: landscape, target: large, mode: .none, allowUpscaling: true, expected: landscape),
        ]
        // Without upscaling, an image that would grow in either direction keeps its size, uncropped.
        for input in [landscape, portrait, square] {
            for mode in [ImageResizer.ScaleMode.fill, .aspectFit, .aspectFill, .none] {
                rows.append(ScaleCase(input: input, target: large, mode: mode, allowUpscaling: false, expected: input))
            }
        }
        // Growing one way and shrinking the other: aspect fit shrinks a landscape image into a
        // square; aspect fill would grow it to 600×300, so without upscaling it stays as it is.
        rows += [
            ScaleCase(input: landscape, target: .init(width: 300, height: 300), mode: .aspectFit, allowUpscaling: false, expected: .init(width: 300, height: 150)),
            ScaleCase(input: landscape, target: .init(width: 300, height: 300), mode: .aspectFill, allowUpscaling: false, expected: landscape),
            ScaleCase(input: landscape, target: .init(width: 300, height: 300), mode: .aspectFill, allowUpscaling: true, expected: .init(width: 300, height: 300), crops: true),
            ScaleCase(input: landscape, target: .init(width: 500, height: 100), mode: .fill, allowUpscaling: false, expected: landscape),
        ]
        return rows
    }()
}
