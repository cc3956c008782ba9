defmodule ExZarr.Codec.RegistryTest do
  use ExUnit.Case, async: true

  alias ExZarr.Codec.Registry

  doctest Registry

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
