defmodule ExZarr.Codecs.Lzma do
  @moduledoc """
  LZMA / XZ (v3 `numcodecs.lzma`, v2 `lzma`) with Python `lzma` semantics, as numcodecs:
  `format` 1 = XZ (default), 2 = LZMA_ALONE, 3 = raw (needs `filters`), 0 = auto-detect
  (decoding only); `check` -1 (default: CRC64 for XZ) or an lzma check id; `preset` nil (6)
  or 0..9, optionally with the extreme flag `0x80000000`; `filters` nil or a list of filter
  specs `%{"id" => id, ...options}` (LZMA1/LZMA2 options `preset`, `dict_size`, `lc`, `lp`,
  `pb`, `mode`, `nice_len`, `mf`, `depth`; delta `dist`; BCJ `start_offset`).

      {:ok, s} = ExZarr.Codecs.Lzma.init(%{"preset" => 1}, %{decoded_size: 5})
      {:ok, xz} = ExZarr.Codecs.Lzma.encode("hello", s)
      {:ok, "hello"} = ExZarr.Codecs.Lzma.decode(xz, s)
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.lzma",
    v2_id: "lzma",
    kind: :bytes_to_bytes,
    keys: ["format", "check", "preset", "filters"]

  import Bitwise

  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Native

  @extreme 0x80000000
  @filter_options ~w(preset dict_size lc lp pb mode nice_len mf depth dist start_offset)

  @impl true
  def init(config, spec) do
    with {:ok, format} <- Numcodecs.int_option(config, "format", 1, 0..3),
         {:ok, check} <- Numcodecs.int_option(config, "check", -1, -1..15),
         {:ok, preset} <- preset_option(Numcodecs.get(config, "preset")),
         {:ok, filters} <- filters_option(Numcodecs.get(config, "filters")) do
      {max, exact} = Numcodecs.decode_bounds(spec)

      {:ok,
       %{
         format: format,
         check: check,
         preset: preset,
         filters: Numcodecs.get(config, "filters"),
         native_filters: filters,
         max: max,
         exact: exact
       }}
    end
  end

  defp preset_option(nil), do: {:ok, nil}

  defp preset_option(p) when is_integer(p) and (p &&& bnot(@extreme)) in 0..9, do: {:ok, p}

  defp preset_option(p), do: Numcodecs.invalid("preset", p)

  defp filters_option(nil), do: {:ok, []}

  defp filters_option(filters) when is_list(filters) and length(filters) in 1..4 do
    tuples = Enum.map(filters, &filter_tuple/1)

    if Enum.all?(tuples, &is_tuple/1),
      do: {:ok, tuples},
      else: Numcodecs.invalid("filters", filters)
  end

  defp filters_option(filters), do: Numcodecs.invalid("filters", filters)

  # {id, option...} with -1 for options not given; nil when the spec is malformed.
  defp filter_tuple(%{"id" => id} = filter) when is_integer(id) and id >= 0 do
    values = Enum.map(@filter_options, &Map.get(filter, &1, -1))
    if Enum.all?(values, &is_integer/1), do: List.to_tuple([id | values])
  end

  defp filter_tuple(_filter), do: nil

  @impl true
  def encode(data, s),
    do: Native.lzma_compress(data, s.format, s.check, s.preset || -1, s.native_filters)

  @impl true
  def decode(data, s),
    do: Native.lzma_decompress(data, s.max, s.exact, s.format, s.native_filters)

  @impl true
  def configuration(s) do
    %{"format" => s.format, "check" => s.check}
    |> put_present("preset", s.preset)
    |> put_present("filters", s.filters)
  end

  defp put_present(map, _key, nil), do: map
  defp put_present(map, key, value), do: Map.put(map, key, value)
end
