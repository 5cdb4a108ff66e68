import Testing

/// An argument of a parameterized test that the test results name by its raw value.
protocol NamedByRawValue: RawRepresentable<String>, CustomTestStringConvertible {}

extension NamedByRawValue {
    var testDescription: String { rawValue }
}
