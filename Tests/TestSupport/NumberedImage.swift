import AsyncImageKit

/// The images the test transports answer `/img/N.png` with (``FakeDataLoader``,
/// and the integration tests' loopback image server): 4x4 PNGs of a colour
/// that encodes N.
public enum NumberedImage {
    /// The colour of image N.
    public static func color(_ n: Int) -> RGBA { RGBA(r: UInt8(n % 256), g: UInt8(n / 256 % 256), b: 77) }
}
