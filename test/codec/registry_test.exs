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
end
