@testable import Images
import Testing

/// The sizes each scale mode gives, as arithmetic (no image is decoded): HanekeSwift's resizer
/// tests in our words, then the whole table of modes, shapes and upscaling.
struct ResizePlanTests {
    private func plan(_ input: ImageSize, _ mode: ImageResizer.ScaleMode, _ target: ImageSize, upscaling: Bool = true) -> ResizePlan {
        ResizePlan(source: input, target: target, scaleMode: mode, allowUpscaling: upscaling)
    }

    // HanekeSwift stretched a 1×1 red image into 30×5 four ways; the answers hold here, but for
    // aspect fill, which now cuts the 30×30 cover down to the target.

    @Test func fillStretchesToExactlyTheTarget() {
        #expect(plan(.init(width: 1, height: 1), .fill, .init(width: 30, height: 5)) == ResizePlan(size: .init(width: 30, height: 5), crops: false))
    }

    @Test func aspectFitFitsTheShorterSide() {
        #expect(plan(.init(width: 1, height: 1), .aspectFit, .init(width: 30, height: 5)).size == .init(width: 5, height: 5))
        // A 10×1 strip fitted into 20×20 is 20×2 (HanekeSwift's size test).
        #expect(plan(.init(width: 10, height: 1), .aspectFit, .init(width: 20, height: 20)).size == .init(width: 20, height: 2))
    }

    @Test func aspectFillCoversThenCutsTheCentre() {
        #expect(plan(.init(width: 1, height: 1), .aspectFill, .init(width: 30, height: 5)) == ResizePlan(size: .init(width: 30, height: 5), crops: true))
        // The cover HanekeSwift stopped at: 30×30, and a 10×1 strip covering 10×10 is 100×10.
        #expect(ResizePlan.cover(.init(width: 30, height: 5), with: .init(width: 1, height: 1)) == .init(width: 30, height: 30))
        #expect(ResizePlan.cover(.init(width: 10, height: 10), with: .init(width: 10, height: 1)) == .init(width: 100, height: 10))
    }

    @Test func noneKeepsTheImagesSize() {
        #expect(plan(.init(width: 1, height: 1), .none, .init(width: 30, height: 5)) == ResizePlan(size: .init(width: 1, height: 1), crops: false))
    }

    @Test func withoutUpscalingAnImageThatWouldGrowKeepsItsSize() {
        #expect(plan(.init(width: 1, height: 1), .aspectFill, .init(width: 30, height: 5), upscaling: false) == ResizePlan(size: .init(width: 1, height: 1), crops: false))
    }

    @Test func anImageOfTheTargetsAspectIsScaledNotCropped() {
        #expect(plan(.init(width: 400, height: 200), .aspectFill, .init(width: 100, height: 50)) == ResizePlan(size: .init(width: 100, height: 50), crops: false))
    }

    @Test func sizesRoundUpAndNeverReachZero() {
        // 1000×333 in 100×100: 33.3 rounds up to 34; a 10,000×1 line in 100×100 keeps one row.
        #expect(plan(.init(width: 1_000, height: 333), .aspectFit, .init(width: 100, height: 100)).size == .init(width: 100, height: 34))
        #expect(plan(.init(width: 10_000, height: 1), .aspectFit, .init(width: 100, height: 100)).size == .init(width: 100, height: 1))
    }

    @Test(arguments: ScaleCase.table)
    func theTable(_ row: ScaleCase) {
        let plan = plan(row.input, row.mode, row.target, upscaling: row.allowUpscaling)
        #expect(plan.size == row.expected)
        #expect(plan.crops == row.crops)
    }

    @Test func outputSizeIsThePlansSize() {
        let resizer = ImageResizer(size: .init(width: 120, height: 80), scaleMode: .aspectFit)
        #expect(resizer.outputSize(for: .init(width: 400, height: 200)) == .init(width: 120, height: 60))
    }
}
