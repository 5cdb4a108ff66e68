/// One event of a Server-Sent Events stream (`text/event-stream`), as the WHATWG EventSource rules dispatch it.
///
/// ```swift
/// for try await event in ServerSentEventSequence(body) {
///     switch event.type {
///     case "message": print(event.data)
///     case "done": return
///     default: continue
///     }
/// }
/// ```
///
/// The stream
///
/// ```text
/// event: update
/// id: 42
/// data: {"price": 10}
/// data: {"price": 11}
///
/// ```
///
/// gives one event: `type` `"update"`, `data` `"{\"price\": 10}\n{\"price\": 11}"`, `id` `"42"`.
public struct ServerSentEvent: Sendable, Hashable {
    /// The event's type: the value of its `event` field, or `"message"` when it had none (or an empty one).
    public var type: String
    /// The event's data: the values of its `data` lines joined with `LF` (`"\n"`), without a trailing one.
    public var data: String
    /// The stream's last event ID when the event was dispatched: set by this event's `id` field or an earlier
    /// one, `nil` while it is empty (the server sent none yet, or reset it with an empty `id`).
    ///
    /// A reconnecting client sends it back as `Last-Event-ID` so the server can resume after it.
    public var id: String?
    /// The reconnection time this event's `retry` field set (a whole number of milliseconds), or `nil` if the
    /// event had no valid `retry` field.
    public var retry: Duration?

    /// Creates an event, for example to script a stream in a test.
    ///
    /// - Parameters:
    ///   - type: The event type; `"message"` unless the server names another.
    ///   - data: The event's data.
    ///   - id: The last event ID at the event, if any.
    ///   - retry: The reconnection time the event set, if any.
    public init(type: String = "message", data: String, id: String? = nil, retry: Duration? = nil) {
        self.type = type
        self.data = data
        self.id = id
        self.retry = retry
    }
}
