import AsyncImageKit
import Foundation

/// `asyncimage-demo decode FILE...`: one JSON line per file,
/// `{"path","ok","format","width","height","frames","error"}`; exit status 1 if any failed.
enum Decode {
    /// Prints a line for each file; false if any failed.
    static func run(_ files: [String]) -> Bool {
        var allOK = true
        for path in files {
            let (line, ok) = Self.line(path: path)
            print(line)
            allOK = allOK && ok
        }
        return allOK
    }

    static func line(path: String) -> (String, Bool) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            return (json(path, ok: false, format: nil, image: nil, error: "cannot read file: \(error.localizedDescription)"), false)
        }
        let format = ImageFormat.sniff(data)
        do {
            let image = try ImageDecoder().decode(data)
            return (json(path, ok: true, format: image.format?.rawValue, image: image, error: nil), true)
        } catch {
            return (json(path, ok: false, format: format?.rawValue, image: nil, error: error.description), false)
        }
    }

    /// The stable one-line shape; keys in this order.
    static func json(_ path: String, ok: Bool, format: String?, image: Image?, error: String?) -> String {
        let fields = [
            "\"path\":\(quote(path))", "\"ok\":\(ok)", "\"format\":\(format.map(quote) ?? "null")",
            "\"width\":\(image.map { String($0.width) } ?? "null")",
            "\"height\":\(image.map { String($0.height) } ?? "null")",
            "\"frames\":\(image.map { String($0.frames.count) } ?? "null")",
            "\"error\":\(error.map(quote) ?? "null")",
        ]
        return "{" + fields.joined(separator: ",") + "}"
    }

    static func quote(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let s where s.value < 0x20: out += String(format: "\\u%04x", s.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
