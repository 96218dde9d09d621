// The shapes of the SwiftUI API the documentation's examples use, for platforms without SwiftUI (Linux, where CI
// runs): the generated examples import this module where SwiftUI cannot be imported, so every example is
// type-checked against MeteorDDP's real API everywhere. Nothing here draws or runs; each declaration has the
// signature of SwiftUI's, no more.

/// SwiftUI's `View`.
@MainActor @preconcurrency
public protocol View {
    associatedtype Body: View
    @ViewBuilder var body: Body { get }
}

extension Never: View {
    public var body: Never { fatalError("a primitive view has no body") }
}

/// A view with no body of its own (Text, List, …).
public protocol PrimitiveView: View where Body == Never {}

extension PrimitiveView {
    public var body: Never { fatalError("a primitive view has no body") }
}

/// SwiftUI's `ViewBuilder`.
@resultBuilder
public enum ViewBuilder {
    public static func buildBlock() -> EmptyView { EmptyView() }
    public static func buildBlock<Content: View>(_ content: Content) -> Content { content }
    public static func buildBlock<each Content: View>(_ content: repeat each Content) -> TupleView<
        (repeat each Content)
    > {
        TupleView()
    }
    public static func buildEither<First: View, Second: View>(first: First) -> ConditionalContent<First, Second> {
        ConditionalContent()
    }
    public static func buildEither<First: View, Second: View>(second: Second) -> ConditionalContent<First, Second> {
        ConditionalContent()
    }
    public static func buildIf<Content: View>(_ content: Content?) -> Content? { content }
}

extension Optional: View where Wrapped: View {
    public var body: Never { fatalError("a primitive view has no body") }
}

public struct EmptyView: PrimitiveView {
    public init() {}
}

public struct TupleView<T>: PrimitiveView {
    public init() {}
}

public struct ConditionalContent<First: View, Second: View>: PrimitiveView {}

/// SwiftUI's `State`.
@propertyWrapper
public struct State<Value> {
    private let value: Value
    public init(initialValue value: Value) { self.value = value }
    public init(wrappedValue value: Value) { self.value = value }
    public var wrappedValue: Value {
        get { value }
        nonmutating set {}
    }
}

public struct Text: PrimitiveView {
    public init(_ content: String) {}
}

public struct ProgressView: PrimitiveView {
    public init() {}
}

public struct Spacer: PrimitiveView {
    public init() {}
}

public struct HStack<Content: View>: PrimitiveView {
    public init(@ViewBuilder content: () -> Content) {}
}

public struct Section<Content: View>: PrimitiveView {
    public init(_ title: String, @ViewBuilder content: () -> Content) {}
}

public struct VStack<Content: View>: PrimitiveView {
    public init(@ViewBuilder content: () -> Content) {}
}

public struct List<Content: View>: PrimitiveView {
    public init<Data: RandomAccessCollection, ID: Hashable>(
        _ data: Data, id: KeyPath<Data.Element, ID>, @ViewBuilder rowContent: @escaping (Data.Element) -> Content
    ) {}
}

public struct ForEach<Content: View>: PrimitiveView {
    public init<Data: RandomAccessCollection, ID: Hashable>(
        _ data: Data, id: KeyPath<Data.Element, ID>, @ViewBuilder content: @escaping (Data.Element) -> Content
    ) {}
}

public struct ModifiedView<Content: View>: PrimitiveView {}

extension View {
    public func navigationTitle(_ title: String) -> ModifiedView<Self> { ModifiedView() }
    public func task(_ action: @escaping @Sendable () async -> Void) -> ModifiedView<Self> { ModifiedView() }
    public func onDisappear(perform action: @escaping () -> Void) -> ModifiedView<Self> { ModifiedView() }
}

/// SwiftUI's `ScenePhase`.
public enum ScenePhase: Hashable, Sendable {
    case background, inactive, active
}

/// SwiftUI's `EnvironmentValues` (the values the examples read).
public struct EnvironmentValues {
    public var scenePhase: ScenePhase { .active }
}

/// SwiftUI's `Environment`.
@propertyWrapper
public struct Environment<Value> {
    private let keyPath: KeyPath<EnvironmentValues, Value>
    public init(_ keyPath: KeyPath<EnvironmentValues, Value>) { self.keyPath = keyPath }
    public var wrappedValue: Value { EnvironmentValues()[keyPath: keyPath] }
}

extension View {
    public func onChange<Value: Equatable>(
        of value: Value, _ action: @escaping (_ oldValue: Value, _ newValue: Value) -> Void
    ) -> ModifiedView<Self> { ModifiedView() }
}
