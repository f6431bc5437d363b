import CContentCardsABI
import ContentCards

// The image cache (docs/BEHAVIOUR.md, "Images"): the path of each card's image is the snapshot's
// "imagePath" and the card JSON's; this waits for the prefetches.

@_cdecl("cc_controller_wait_images")
public func cc_controller_wait_images(_ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                      _ controller: OpaquePointer?, _ timeoutSeconds: Double) -> Int32 {
    entry { () throws(ContentCardsError) in
        outJSON?.pointee = nil
        let c = try Handles.controller(controller)
        let stats = try c.waitForImages(timeout: try timeoutArgument(timeoutSeconds))
        try CStrings.output(outJSON, ResultJSON.images(stats))
    }
}
