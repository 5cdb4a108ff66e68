import Foundation
import HTTPTypes
import Hummingbird

extension TestRouter {
    /// The item the OpenAPI routes answer with (the `Item` schema of the end-to-end tests' OpenAPI document).
    struct OpenAPIItem: Codable, Sendable {
        var id: String
        var name: String
        var realm: String
    }

    /// What `POST /openapi/realms/:realm/items` reads.
    struct NewOpenAPIItem: Codable, Sendable {
        var name: String
    }

    /// The routes of the end-to-end tests' OpenAPI document (`/openapi` is its server URL), behind the realm's
    /// bearer token (see the auth routes); a rejected token answers 401 as `/auth/:realm/protected` does.
    /// - `GET /openapi/realms/:realm/items/:id` → `200 {"id":ID,"name":"Item ID","realm":REALM}`; the id `missing`
    ///   answers `404 {"error":true,"reason":"No such item."}`.
    /// - `POST /openapi/realms/:realm/items` with `{"name":NAME}` → `201 {"id":"new-NAME","name":NAME,"realm":REALM}`.
    static func addOpenAPIRoutes(to router: Router<BasicRequestContext>, state: ServerState) {
        router.get("openapi/realms/:realm/items/:id") { request, context in
            let realm = context.parameters.get("realm") ?? defaultRealm
            if let rejection = try await Self.rejectBearer(request, realm: realm, state: state) { return rejection }
            let id = context.parameters.get("id") ?? ""
            guard id != "missing" else {
                return try Response.json(ErrorResponse(reason: "No such item."), status: .notFound)
            }
            return try Response.json(OpenAPIItem(id: id, name: "Item \(id)", realm: realm))
        }
        router.post("openapi/realms/:realm/items") { request, context in
            let realm = context.parameters.get("realm") ?? defaultRealm
            if let rejection = try await Self.rejectBearer(request, realm: realm, state: state) { return rejection }
            let new = try await request.decode(as: NewOpenAPIItem.self, context: context)
            return try Response.json(OpenAPIItem(id: "new-\(new.name)", name: new.name, realm: realm), status: .created)
        }
    }

    /// A 401 for a request without the realm's current bearer token, or `nil` when the token is good.
    private static func rejectBearer(_ request: Request, realm: String, state: ServerState) async throws -> Response? {
        guard await state.checkToken(Self.bearerToken(request.headers[.authorization]), realm: realm) != nil else {
            return nil
        }
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = #"Bearer realm="\#(realm)", error="invalid_token""#
        return try Response.json(ErrorResponse(reason: "Invalid token."), status: .unauthorized, headers: headers)
    }
}
