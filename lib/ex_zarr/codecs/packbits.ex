defmodule ExZarr.Codecs.Packbits do
  @moduledoc """
  numcodecs PackBits filter (v3 `numcodecs.packbits`, v2 filter `packbits`), array->array for
  boolean chunks: one byte with the number of padding bits, then eight booleans per byte (most
  significant bit first). The encoded chunk is a 1-d `:uint8` array of `1 + ceil(n / 8)`.

      iex> spec = %{shape: {4}, dtype: :bool, fill_value: false, decoded_size: nil}
      iex> {:ok, s} = ExZarr.Codecs.Packbits.init(%{}, spec)
      iex> ExZarr.Codecs.Packbits.encode(<<1, 0, 0, 1>>, s)
      {:ok, <<4, 0b10010000>>}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.packbits",
    v2_id: "packbits",
    kind: :array_to_array,
    keys: []

  alias ExZarr.Native

  @impl true
  def init(_config, %{dtype: :bool, shape: shape}),
    do: {:ok, %{n: shape |> Tuple.to_list() |> Enum.product()}}

  def init(_config, spec), do: {:error, {:unsupported_dtype, Map.get(spec, :dtype)}}

  @impl true
  def resolve_spec(spec, %{n: n}), do: %{spec | shape: {1 + div(n + 7, 8)}, dtype: :uint8}

  @impl true
  def encode(data, _s), do: Native.packbits(IO.iodata_to_binary(data))

  @impl true
  def decode(data, %{n: n}), do: Native.unpackbits(data, n)

  @impl true
  def configuration(_s), do: %{}
end
