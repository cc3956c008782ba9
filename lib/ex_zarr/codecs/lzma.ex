defmodule ExZarr.Codecs.Lzma do
  @moduledoc """
  LZMA / XZ (v3 `numcodecs.lzma`, v2 `lzma`) with Python `lzma` semantics, as numcodecs:
  `format` 1 = XZ (default), 2 = LZMA_ALONE, 3 = raw (needs `filters`), 0 = auto-detect
  (decoding only); `check` -1 (default: CRC64 for XZ), 0 (none), 1 (CRC32), 4 (CRC64) or 10
  (SHA-256), only -1 or 0 but with XZ; `preset` nil (6) or 0..9, optionally with the extreme
  flag `0x80000000`; `filters` nil (then `preset` applies) or a list of 1 to 4 filter specs
  `%{"id" => id, ...options}`: delta or BCJ filters then one LZMA1 or LZMA2 filter (LZMA2 for
  XZ, a single LZMA1 for LZMA_ALONE). Filter options, checked against liblzma's ranges:
  LZMA1/LZMA2 `preset`, `dict_size`, `lc`, `lp`, `pb`, `mode`, `nice_len`, `mf`, `depth`;
  delta `dist`; BCJ `start_offset`.

      iex> {:ok, s} = ExZarr.Codecs.Lzma.init(%{"preset" => 1}, %{decoded_size: 5})
      iex> {:ok, xz} = ExZarr.Codecs.Lzma.encode("hello", s)
      iex> ExZarr.Codecs.Lzma.decode(xz, s)
      {:ok, "hello"}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.lzma",
    v2_id: "lzma",
    kind: :bytes_to_bytes,
    keys: ["format", "check", "preset", "filters"]

  import Bitwise

  alias ExZarr.Codec.Config
  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Native

  @extreme 0x80000000
  # Filter ids (Python's lzma.FILTER_*) and the options each one takes, with what liblzma
  # accepts for them (lzma/lzma12.h, delta.h, bcj.h).
  @lzma1 0x4000000000000001
  @lzma2 0x21
  @delta 3
  # BCJ filters (x86, PowerPC, IA-64, ARM, ARM-Thumb, SPARC) and their start_offset alignment.
  @bcj %{4 => 1, 5 => 4, 6 => 16, 7 => 4, 8 => 2, 9 => 4}
  @u32 0..0xFFFFFFFF
  @lzma_options %{
    "dict_size" => 4096..0x60000000,
    "lc" => 0..4,
    "lp" => 0..4,
    "pb" => 0..4,
    "mode" => 1..2,
    "nice_len" => 2..273,
    "depth" => @u32
  }
  @match_finders [3, 4, 18, 19, 20]
  # The order of options in the tuples the NIF takes.
  @native_options ~w(preset dict_size lc lp pb mode nice_len mf depth dist start_offset)
  # Integrity checks liblzma supports: none, CRC32, CRC64, SHA-256 (-1: the format's default).
  @checks [-1, 0, 1, 4, 10]

  @impl true
  def init(config, spec) do
    with {:ok, format} <- Config.integer(config, "format", 1, 0..3),
         {:ok, check} <- Config.one_of(config, "check", -1, @checks),
         :ok <- check_for_format(format, check),
         {:ok, preset} <- preset_option(config),
         {:ok, filters} <- filters_option(Config.get(config, "filters"), format),
         :ok <- one_of_preset_filters(preset, filters) do
      {max, exact} = Numcodecs.decode_bounds(spec)

      {:ok,
       %{
         format: format,
         check: check,
         preset: preset,
         filters: Config.get(config, "filters"),
         native_filters: Enum.map(filters, &native_filter/1),
         max: max,
         exact: exact
       }}
    end
  end

  defp check_for_format(format, check) when format == 1 or check in [-1, 0], do: :ok

  defp check_for_format(_format, check),
    do: Config.invalid("check", check, "-1 or 0: integrity checks need format 1 (xz)")

  defp preset_option(config) do
    case Config.get(config, "preset") do
      nil -> {:ok, nil}
      p -> preset(p)
    end
  end

  defp preset(p) when is_integer(p) and p >= 0 and (p &&& bnot(@extreme)) in 0..9, do: {:ok, p}

  defp preset(p),
    do: Config.invalid("preset", p, "0..9, optionally with the extreme flag 0x80000000")

  defp one_of_preset_filters(preset, filters) when preset == nil or filters == [], do: :ok

  defp one_of_preset_filters(preset, _filters),
    do: Config.invalid("preset", preset, "null when filters are given")

  defp filters_option(nil, 3), do: {:error, {:missing_key, "filters"}}
  defp filters_option(nil, _format), do: {:ok, []}

  defp filters_option(filters, format) when is_list(filters) and length(filters) in 1..4 do
    with {:ok, parsed} <- ExZarr.Result.map_ok(filters, &filter/1),
         :ok <- check_chain(Enum.map(parsed, &elem(&1, 0)), format),
         do: {:ok, parsed}
  end

  defp filters_option(filters, _format),
    do: Config.invalid("filters", filters, "null or a list of 1 to 4 filter objects")

  # A filter spec -> {id, options}, its options checked; errors name the spec.
  defp filter(%{"id" => id} = spec) do
    options = Map.delete(spec, "id")

    with {:ok, known} <- filter_keys(id, spec),
         :ok <- filter_check(Config.check_keys(options, known), spec),
         {:ok, values} <- ExZarr.Result.map_ok(options, &filter_option(id, &1)),
         values = Map.new(values),
         :ok <- check_lc_lp(id, values) do
      {:ok, {id, values}}
    else
      {:error, {:invalid_value, "filters", _, _}} = error ->
        error

      {:error, {:invalid_value, key, v, expected}} ->
        Config.invalid("filters", spec, "#{key} #{inspect(v)}: expected #{expected}")
    end
  end

  defp filter(spec), do: Config.invalid("filters", spec, "a filter object with an \"id\"")

  defp filter_keys(id, _spec) when id in [@lzma1, @lzma2],
    do: {:ok, ["preset", "mf" | Map.keys(@lzma_options)]}

  defp filter_keys(@delta, _spec), do: {:ok, ["dist"]}
  defp filter_keys(id, _spec) when is_map_key(@bcj, id), do: {:ok, ["start_offset"]}

  defp filter_keys(_id, spec),
    do: Config.invalid("filters", spec, "a filter id of LZMA1, LZMA2, delta or a BCJ filter")

  defp filter_check(:ok, _spec), do: :ok

  defp filter_check({:error, {:unknown_key, key}}, spec),
    do: Config.invalid("filters", spec, "no option #{inspect(key)} for this filter")

  defp filter_option(_id, {"preset", value}),
    do: with({:ok, p} <- preset(value), do: {:ok, {"preset", p}})

  defp filter_option(_id, {"mf", value}), do: filter_value("mf", value, @match_finders)

  defp filter_option(_id, {"dist", value}), do: filter_value("dist", value, 1..256)

  defp filter_option(id, {"start_offset", value}) do
    align = Map.fetch!(@bcj, id)

    if is_integer(value) and value in @u32 and rem(value, align) == 0,
      do: {:ok, {"start_offset", value}},
      else: Config.invalid("start_offset", value, "a multiple of #{align} in #{inspect(@u32)}")
  end

  defp filter_option(_id, {key, value}),
    do: filter_value(key, value, Map.fetch!(@lzma_options, key))

  defp filter_value(key, value, allowed) do
    if is_integer(value) and value in allowed,
      do: {:ok, {key, value}},
      else: Config.invalid(key, value, "an integer in #{inspect(allowed)}")
  end

  # LZMA2 takes lc + lp <= 4 (lc defaults to 3, lp to 0).
  defp check_lc_lp(@lzma2, options) do
    lc_lp = Map.get(options, "lc", 3) + Map.get(options, "lp", 0)
    if lc_lp <= 4, do: :ok, else: Config.invalid("lc", lc_lp, "lc + lp <= 4 with LZMA2")
  end

  defp check_lc_lp(_id, _options), do: :ok

  # liblzma's chain rules: the last filter is LZMA1 or LZMA2 (LZMA2 in .xz, one LZMA1 in
  # LZMA_ALONE), the others delta or BCJ.
  defp check_chain(ids, format) do
    {last, others} = List.pop_at(ids, -1)

    cond do
      format == 2 and ids != [@lzma1] ->
        Config.invalid("filters", ids, "one LZMA1 filter (#{@lzma1}) with format 2")

      format == 1 and last != @lzma2 ->
        Config.invalid("filters", ids, "a chain ending with LZMA2 (#{@lzma2}) with format 1")

      last not in [@lzma1, @lzma2] or Enum.any?(others, &(&1 in [@lzma1, @lzma2])) ->
        Config.invalid("filters", ids, "delta or BCJ filters, then one LZMA1 or LZMA2 filter")

      true ->
        :ok
    end
  end

  # {id, option...} in the NIF's order, -1 for options not given.
  defp native_filter({id, options}),
    do: List.to_tuple([id | Enum.map(@native_options, &Map.get(options, &1, -1))])

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
