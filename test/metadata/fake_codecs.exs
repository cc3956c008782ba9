# Codecs that exist only to test how metadata places filters and compressors in a pipeline;
# they pass data through unchanged. Loading this file registers them.
defmodule ExZarr.Test.FakeCodec do
  @moduledoc false

  defmacro __using__(opts) do
    quote bind_quoted: [opts: opts] do
      @behaviour ExZarr.Codec
      @name Keyword.fetch!(opts, :name)
      @kind Keyword.fetch!(opts, :kind)

      @impl true
      def name, do: @name
      @impl true
      def kind, do: @kind
      @impl true
      def init(config, _spec), do: {:ok, config}
      @impl true
      def encode(data, _state), do: {:ok, data}
      @impl true
      def decode(data, _state), do: {:ok, data}
      @impl true
      def configuration(config), do: config
    end
  end
end

defmodule ExZarr.Test.FakeArrayCodec do
  @moduledoc false
  use ExZarr.Test.FakeCodec, name: "test.array", kind: :array_to_array

  @impl true
  def resolve_spec(spec, _state), do: spec
  @impl true
  def v2_id, do: "test_array"
  @impl true
  def from_v2(config), do: {:ok, Map.delete(config, "id")}
  @impl true
  def to_v2(config), do: {:ok, Map.put(config, "id", "test_array")}
end

defmodule ExZarr.Test.FakeBytesCodec do
  @moduledoc false
  use ExZarr.Test.FakeCodec, name: "test.bytes", kind: :bytes_to_bytes

  @impl true
  def v2_id, do: "test_bytes"
  @impl true
  def from_v2(config), do: {:ok, Map.delete(config, "id")}
  @impl true
  def to_v2(config), do: {:ok, Map.put(config, "id", "test_bytes")}
end

defmodule ExZarr.Test.FakeSerializer do
  @moduledoc false
  use ExZarr.Test.FakeCodec, name: "test.serializer", kind: :array_to_bytes
end

for module <- [ExZarr.Test.FakeArrayCodec, ExZarr.Test.FakeBytesCodec, ExZarr.Test.FakeSerializer] do
  :ok = ExZarr.Codec.Registry.register(module)
end
