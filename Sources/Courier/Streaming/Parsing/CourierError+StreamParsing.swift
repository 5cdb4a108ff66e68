import Foundation

extension CourierError {
    /// How many characters of a line a decoding error quotes (redacted).
    static let lineExcerptLength = 40

    /// A line of a streamed body is longer than its sequence allows.
    static func lineTooLong(lineNumber: Int, maximum: Int, in stream: String) -> Self {
        CourierError(
            .bodyTooLarge,
            message: "line \(lineNumber) of the \(stream) is longer than the maximum of \(maximum) bytes"
        )
    }

    /// The data of one server-sent event is longer than its sequence allows.
    static func eventTooLarge(lineNumber: Int, maximum: Int) -> Self {
        CourierError(
            .bodyTooLarge,
            message: "the data of the event at line \(lineNumber) of the event stream is longer than the maximum of"
                + " \(maximum) bytes"
        )
    }

    /// A line of a JSON Lines stream is not a `T`. The message quotes at most ``lineExcerptLength`` characters
    /// of the line, redacted.
    static func lineNotDecodable<T>(
        _ type: T.Type,
        lineNumber: Int,
        line: UnsafeRawBufferPointer,
        underlying: any Error
    ) -> Self {
        let excerpt = Redaction.bodyPreview(
            // Enough for the excerpt and for the redaction rules to see a secret that starts in it.
            Data(line.prefix(lineExcerptLength * 4 + Redaction.maximumSecretLength)),
            limit: lineExcerptLength
        )
        return CourierError(
            .decodingFailed,
            message: "line \(lineNumber) of the JSON Lines stream could not be decoded as \(T.self):"
                + " \(decodingFailureReason(underlying)); the line starts: \(excerpt)",
            underlying: underlying
        )
    }

    /// What went wrong, in a few words: the decoder's explanation and where in the value.
    private static func decodingFailureReason(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(type(of: error))" }
        let context: DecodingError.Context
        switch error {
        case .keyNotFound(_, let found), .typeMismatch(_, let found), .valueNotFound(_, let found),
            .dataCorrupted(let found):
            context = found
        @unknown default:
            return "DecodingError"
        }
        guard !context.codingPath.isEmpty else { return context.debugDescription }
        return context.debugDescription + " (at " + context.codingPath.map(\.stringValue).joined(separator: ".") + ")"
    }
}
