public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A client's middleware and transport, composed once per configuration change.
///
/// Sending walks the array by index (`Next` carries the position), so a request costs no closure
/// allocation and no actor hop; a pass-through layer is one indexed closure call.
@usableFromInline
final class Chain: Sendable {
    private let handlers: [Middleware.Handler]
    private let names: [String?]
    let transport: any Transport

    init(middleware: [Middleware], transport: any Transport) {
        self.handlers = middleware.map(\.handler)
        self.names = middleware.map(\.name)
        self.transport = transport
    }

    @usableFromInline
    func send(_ request: URLRequest, from index: Int) async throws -> (Data, HTTPURLResponse) {
        guard index < handlers.count else {
            return try await sendToTransport(request)
        }
        do {
            return try await handlers[index](request, Next(chain: self, index: index + 1))
        } catch let error as CourierError {
            // The innermost layer an error crosses is where it came from; outer layers keep that name.
            throw error.attributed(toMiddleware: names[index])
        }
    }

    private func sendToTransport(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        // Errors made here belong to no middleware: they are attributed before they cross any layer, so that
        // the innermost middleware does not take the blame for a transport error or a refused request.
        do {
            return try await transport.send(request)
        } catch let error as CourierError {
            throw error.attributed(toMiddleware: nil)
        } catch let error as CancellationError {
            throw error
        } catch {
            // URLSession reports a cancelled task as URLError(.cancelled); callers see CancellationError.
            if Task.isCancelled { throw CancellationError() }
            throw CourierError.transport(error, request: request).attributed(toMiddleware: nil)
        }
    }
}
