defmodule ExZarr.Codec.RegistryTest do
  use ExUnit.Case, async: true

  alias ExZarr.Codec.Registry

  doctest Registry

  defmodule Doubler do
    @moduledoc false
    @behaviour ExZarr.Codec
    def name, do: "test.registry_doubler"
    def kind, do: :bytes_to_bytes
    def init(config, _spec), do: {:ok, config}
    def encode(data, _state), do: {:ok, [data, data]}
    def decode(data, _state), do: {:ok, binary_part(data, 0, div(byte_size(data), 2))}
    def configuration(config), do: config
  end

  test "every v3 name finds its module, whose name it is" do
    for name <- ~w(bytes transpose gzip crc32c zstd blosc sharding_indexed vlen-utf8 vlen-bytes) do
      assert {:ok, module} = Registry.fetch(name)
      assert module.name() == name
    end
  end

  test "numcodecs.<id> finds a codec by its v2 id, its configuration read as numcodecs writes it" do
    assert {:ok, ExZarr.Codecs.Zstd, config} =
             Registry.resolve(%{name: "numcodecs.zstd", configuration: %{"level" => 5}})

    assert config["level"] == 5
    assert {:ok, ExZarr.Codecs.Lz4} = Registry.fetch("numcodecs.lz4")
    assert Registry.fetch("numcodecs.nope") == {:error, {:unsupported_codec, "numcodecs.nope"}}
  end

  test "a configuration that is not an object is an error" do
    assert Registry.resolve(%{name: "zstd", configuration: [1]}) ==
             {:error, {:invalid_codec_config, "zstd", {:not_an_object, [1]}}}
  end

  test "v2 configs and v3 specs translate both ways" do
    assert {:ok, %{name: "zstd", configuration: v3}, :bytes_to_bytes} =
             Registry.from_v2(%{"id" => "zstd", "level" => 3})

    assert {:ok, %{"id" => "zstd", "level" => 3}} =
             Registry.to_v2(%{name: "zstd", configuration: v3})

    assert Registry.from_v2(%{"id" => "nope"}) == {:error, {:unsupported_codec, "nope"}}

    assert Registry.from_v2(%{"level" => 1}) ==
             {:error, {:invalid_codec_config, nil, {:missing_key, "id"}}}

    assert Registry.to_v2(%{name: "sharding_indexed", configuration: %{}}) ==
             {:error, {:not_in_zarr_v2, "sharding_indexed"}}
  end

  test "a user codec is found after register/1; a module that is not a codec is refused" do
    assert Registry.fetch(Doubler.name()) == {:error, {:unsupported_codec, Doubler.name()}}
    assert Registry.register(Doubler) == :ok
    assert Registry.fetch(Doubler.name()) == {:ok, Doubler}
    assert Registry.register(String) == {:error, {:not_a_codec, String}}
    assert Registry.register(NoSuchModule) == {:error, {:not_a_codec, NoSuchModule}}
  end

  # A pass-through bytes->bytes codec named `name`, as a new module.
  defp codec_module(name, kind \\ :bytes_to_bytes) do
    module = :"Elixir.ExZarr.Codec.RegistryTest.#{Macro.camelize(String.replace(name, ".", "_"))}"

    body =
      quote do
        @behaviour ExZarr.Codec
        def name, do: unquote(name)
        def kind, do: unquote(kind)
        def init(config, _spec), do: {:ok, config}
        def encode(data, _state), do: {:ok, data}
        def decode(data, _state), do: {:ok, data}
        def configuration(config), do: config
      end

    {:module, ^module, _, _} = Module.create(module, body, Macro.Env.location(__ENV__))
    module
  end

  test "registers a codec under its name" do
    module = codec_module("test.registry.one")

    assert Registry.fetch("test.registry.one") ==
             {:error, {:unsupported_codec, "test.registry.one"}}

    assert Registry.register(module) == :ok
    assert Registry.fetch("test.registry.one") == {:ok, module}
  end

  test "refuses what is not a codec, whatever it is" do
    defmodule OnlyName do
      def name, do: "test.registry.only_name"
    end

    bad_kind = codec_module("test.registry.bad_kind", :bytes_to_array)

    for other <- [OnlyName, bad_kind, String, :no_such_module, "zstd", 1, nil, %{}, [Map]] do
      assert Registry.register(other) == {:error, {:not_a_codec, other}}
    end

    assert {:error, {:unsupported_codec, _}} = Registry.fetch("test.registry.only_name")
    assert {:error, {:unsupported_codec, _}} = Registry.fetch("test.registry.bad_kind")
  end

  test "anything but a codec spec or a numcodecs config is an error, not a crash" do
    for other <- [%{}, "zstd", :zstd, nil, [], %{"name" => "zstd"}, %{name: 1}, {:zstd, 1}] do
      assert {:error, _} = Registry.resolve(other)
      assert {:error, _} = Registry.to_v2(other)
    end

    assert Registry.from_v2("zstd") ==
             {:error, {:invalid_codec_config, nil, {:not_an_object, "zstd"}}}

    assert Registry.from_v2(%{"level" => 1}) ==
             {:error, {:invalid_codec_config, nil, {:missing_key, "id"}}}

    assert {:error, {:invalid_codec_config, nil, {:invalid_value, "id", 5, _}}} =
             Registry.from_v2(%{"id" => 5})
  end

  test "concurrent registrations all land" do
    names = for i <- 1..16, do: "test.registry.many#{i}"
    modules = Enum.map(names, &codec_module/1)

    modules
    |> Task.async_stream(&Registry.register/1, max_concurrency: 16)
    |> Enum.each(&assert(&1 == {:ok, :ok}))

    for {name, module} <- Enum.zip(names, modules),
        do: assert(Registry.fetch(name) == {:ok, module})
  end
end
