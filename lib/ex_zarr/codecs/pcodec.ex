defmodule ExZarr.Codecs.Pcodec do
  @moduledoc """
  numcodecs PCodec (v3 `numcodecs.pcodec`, an array->bytes codec; v2 compressor `pcodec`):
  pcodec's standalone format for chunks of uint16/32/64, int16/32/64 and float16/32/64, lossless,
  byte for byte as numcodecs writes it (the Rust crate `pco` 0.4.9, as python pcodec 0.3.6,
  linked into the NIF when cargo is installed at build time).

  Configuration (numcodecs'): `level` 0..12 (default 8), `mode_spec` `"auto"` | `"classic"`,
  `delta_spec` `"auto"` | `"none"` | `"try_consecutive"` | `"try_lookback"`,
  `delta_encoding_order` `null` or 0..7 (with `"try_consecutive"`, or with `"auto"`, which it
  then turns into `"try_consecutive"`), `paging_spec` `"equal_pages_up_to"`,
  `equal_pages_up_to` (default 262144).

      iex> spec = %{shape: {3}, dtype: :int32, fill_value: 0, decoded_size: nil}
      iex> {:ok, s} = ExZarr.Codecs.Pcodec.init(%{"level" => 3}, spec)
      iex> {:ok, data} = ExZarr.Codecs.Pcodec.encode(<<1::32-little, 2::32-little, 3::32-little>>, s)
      iex> ExZarr.Codecs.Pcodec.decode(data, s)
      {:ok, <<1::32-little, 2::32-little, 3::32-little>>}

  Decoding accepts only data holding exactly the chunk's numbers of its type.
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.pcodec",
    v2_id: "pcodec",
    kind: :array_to_bytes,
    keys: ~w(level mode_spec delta_spec paging_spec delta_encoding_order equal_pages_up_to)

  alias ExZarr.Codec.Config
  alias ExZarr.{DType, Native}

  @types %{
    uint16: 1,
    uint32: 2,
    uint64: 3,
    int16: 4,
    int32: 5,
    int64: 6,
    float16: 7,
    float32: 8,
    float64: 9
  }
  @modes %{"auto" => 0, "classic" => 1}
  @deltas %{"auto" => 0, "none" => 1, "try_consecutive" => 2, "try_lookback" => 3}
  @defaults %{
    "level" => 8,
    "mode_spec" => "auto",
    "delta_spec" => "auto",
    "paging_spec" => "equal_pages_up_to",
    "delta_encoding_order" => :null,
    "equal_pages_up_to" => 262_144
  }

  # numcodecs writes every option in v2.
  @impl true
  def to_v2(config), do: {:ok, @defaults |> Map.merge(config) |> Map.put("id", v2_id())}

  @impl true
  def init(config, %{shape: shape, dtype: dtype}) do
    with {:ok, level} <- Config.integer(config, "level", 8, 0..12),
         {:ok, mode} <- Config.one_of(config, "mode_spec", "auto", Map.keys(@modes)),
         {:ok, delta} <- Config.one_of(config, "delta_spec", "auto", Map.keys(@deltas)),
         {:ok, _} <-
           Config.one_of(config, "paging_spec", "equal_pages_up_to", ["equal_pages_up_to"]),
         {:ok, order} <- Config.integer(config, "delta_encoding_order", nil, 0..7),
         {:ok, page_n} <- Config.integer(config, "equal_pages_up_to", 262_144, 1..16_777_216),
         {:ok, delta, order} <- delta_spec(delta, order),
         {:ok, type} <- pco_type(dtype) do
      {:ok,
       %{
         type: type,
         size: DType.itemsize(dtype) * ExZarr.Shape.product(shape),
         native: {level, @modes[mode], @deltas[delta], order, page_n},
         config: config
       }}
    end
  end

  # numcodecs: an order with "auto" means "try_consecutive"; with anything else but
  # "try_consecutive" it is an error, as "try_consecutive" without one.
  defp delta_spec("auto", order) when is_integer(order), do: {:ok, "try_consecutive", order}

  defp delta_spec("try_consecutive", order) when is_integer(order),
    do: {:ok, "try_consecutive", order}

  defp delta_spec("try_consecutive", nil),
    do: Config.invalid("delta_encoding_order", nil, ~s(0..7 with delta_spec "try_consecutive"))

  defp delta_spec(delta, nil), do: {:ok, delta, 0}

  defp delta_spec(_delta, order),
    do:
      Config.invalid(
        "delta_encoding_order",
        order,
        ~s(null unless delta_spec is "auto" or "try_consecutive")
      )

  defp pco_type(dtype) do
    case Map.fetch(@types, dtype) do
      {:ok, type} -> {:ok, type}
      :error -> {:error, {:unsupported_dtype, dtype, "pcodec takes 16, 32 and 64-bit numbers"}}
    end
  end

  @impl true
  def encode(data, s), do: Native.pco_compress(IO.iodata_to_binary(data), s.type, s.native)

  @impl true
  def decode(data, s), do: Native.pco_decompress(data, s.type, s.size)

  @impl true
  def configuration(s), do: s.config
end
