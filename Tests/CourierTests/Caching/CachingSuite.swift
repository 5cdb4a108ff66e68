import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the caching suites build requests and read bodies with.
protocol CachingSuite {}

extension CachingSuite {
    static var base: URL { URL(string: "https://api.example.test")! }

    /// A request for `path` on ``base`` with `headers` and `method`.
    func get(_ path: String, _ headers: [String: String] = [:], method: String = "GET") -> URLRequest {
        var request = URLRequest(url: Self.base.appending(path: path))
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// The body of `result` as UTF-8 text.
    func text(_ result: (Data, HTTPURLResponse)) -> String {
        String(decoding: result.0, as: UTF8.self)
    }
}
