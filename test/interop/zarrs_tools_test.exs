defmodule ExZarr.Interop.ZarrsToolsTest do
  @moduledoc """
  zarrs itself as a peer, through its command line tools (zarrs_tools 0.8.1, zarrs 0.23):

    * ExZarr writes arrays (v3, and one v2; several dtypes, bfloat16 included; gzip, zstd,
      blosc, crc32c, transpose, sharding, big-endian; fill values and missing chunks);
      `zarrs_info` reports their shape, data type and fill value, `zarrs_reencode` rewrites
      each with the same encoding and with others (resharded with zstd, blosc, big-endian with
      gzip),
      `zarrs_validate` finds each rewrite equal to ExZarr's array, and ExZarr reads every
      rewrite back bit for bit;
    * zarrs writes: the rewrites above are arrays zarrs wrote; `zarrs_binary2zarr` turns raw
      bytes into uint8 arrays (plain, gzip, transposed, sharded zstd) that ExZarr reads bit
      for bit, and `zarrs_reencode --data-type` casts ExZarr's float64 array to float32 and
      bfloat16, which ExZarr reads as its own rounding of the same values (to nearest, ties
      to even); it rewrites ExZarr's variable-length bytes and string arrays (its own `bytes`
      data type, fill values as arrays of byte values), which ExZarr reads back.

  What the tools cannot do: they write Zarr v3 only; zarrs 0.23 reads no v2 `zlib` arrays
  ("codec zlib is not supported"); `zarrs_binary2zarr` 0.8.1 writes only uint8 (see its test);
  and zarrs_tools builds zarrs with the crate's default codecs (no zfp, pcodec or numcodecs.*
  codecs), so those are not covered here.
  Tagged `:zarrs_tools`; skipped when the tools are not built (`scripts/install-zarrs-tools`).
  """
  use ExUnit.Case, async: true

  alias ExZarr.DType.LowPrecision
  alias ExZarr.Test.{Interop, ZarrsTools}

  @moduletag :interop
  @moduletag :zarrs_tools
  @moduletag timeout: 300_000
  unless ZarrsTools.dir() do
    @moduletag skip: "zarrs_tools is not built (scripts/install-zarrs-tools)"
  end

  @zstd ~s([{"name": "zstd", "configuration": {"level": 3, "checksum": false}}])
  @gzip ~s([{"name": "gzip", "configuration": {"level": 5}}])
  @big ~s({"name": "bytes", "configuration": {"endian": "big"}})

  # {name, ExZarr.create/1 options, the region ExZarr writes (nil: all)}
  @cases [
    {"int32 gzip, fill 7, missing chunks, names and attributes",
     [
       shape: {23, 17},
       chunks: {5, 4},
       dtype: :int32,
       fill_value: 7,
       compressor: %{id: "gzip", level: 5},
       dimension_names: ["y", nil],
       attributes: %{"units" => "K", "nested" => %{"list" => [1, 2.5, nil, "s"]}}
     ], {{2, 3}, {14, 11}}},
    {"float64 zstd in shards, missing shards",
     [
       shape: {40, 30},
       chunks: {8, 10},
       shards: {16, 30},
       dtype: :float64,
       fill_value: -1.5,
       compressor: %{id: "zstd", level: 3}
     ], {{0, 0}, {20, 30}}},
    {"uint16 blosc lz4, big-endian",
     [
       shape: {100},
       chunks: {7},
       dtype: :uint16,
       endian: :big,
       compressor: %{id: "blosc", cname: "lz4", clevel: 5, shuffle: 1}
     ], nil},
    {"float32 F order (transpose), crc32c",
     [
       shape: {12, 13, 5},
       chunks: {4, 5, 3},
       dtype: :float32,
       fill_value: :nan,
       codecs: [
         %{name: "transpose", configuration: %{"order" => [2, 1, 0]}},
         %{name: "bytes", configuration: %{"endian" => "little"}},
         %{name: "crc32c", configuration: %{}}
       ]
     ], {{1, 0, 1}, {12, 9, 5}}},
    {"bfloat16 zstd in shards",
     [
       shape: {33, 20},
       chunks: {8, 8},
       shards: {16, 16},
       dtype: :bfloat16,
       fill_value: 0.0,
       compressor: %{id: "zstd", level: 1}
     ], {{0, 0}, {30, 20}}},
    {"float16 uncompressed",
     [shape: {50}, chunks: {9}, dtype: :float16, fill_value: 1.0, compressor: nil], {{5}, {41}}},
    {"complex64 gzip",
     [shape: {10, 10}, chunks: {3, 3}, dtype: :complex64, compressor: %{id: "gzip", level: 1}],
     nil},
    {"bool, missing chunks",
     [shape: {30}, chunks: {8}, dtype: :bool, fill_value: true, compressor: nil], {{0}, {20}}},
    {"int8 with crc32c only",
     [
       shape: {17, 9},
       chunks: {4, 4},
       dtype: :int8,
       codecs: [%{name: "bytes", configuration: %{}}, %{name: "crc32c", configuration: %{}}]
     ], nil},
    {"int64 v2 gzip (zarrs reads v2, writes v3)",
     [
       shape: {19, 6},
       chunks: {5, 5},
       dtype: :int64,
       zarr_format: 2,
       fill_value: 3,
       compressor: %{id: "gzip", level: 1}
     ], {{0, 0}, {10, 6}}}
  ]

  setup_all do
    dir = Interop.tmp_dir!("zarrs-tools")
    on_exit(fn -> File.rm_rf!(dir) end)
    %{dir: dir}
  end

  describe "zarrs reads and rewrites ExZarr's arrays, ExZarr reads the rewrites:" do
    for {{name, opts, region}, i} <- Enum.with_index(@cases) do
      @tag case_opts: opts, region: region, index: i
      test name, %{dir: dir, case_opts: opts, region: region, index: i} do
        src = Path.join(dir, "src#{i}")
        expected = write_exzarr(src, opts, region)
        meta = ExZarr.open!(path: src).metadata
        assert_zarrs_info(src, meta)

        for {variant, args} <- variants(meta) do
          out = Path.join(dir, "out#{i}-#{variant}")
          ZarrsTools.run!("zarrs_reencode", args ++ [src, out])
          assert ZarrsTools.run!("zarrs_validate", [src, out]) =~ "match", variant

          rewrite = ExZarr.open!(path: out)
          assert rewrite.metadata.zarr_format == 3
          assert rewrite.metadata.dtype == meta.dtype
          assert same_fill?(rewrite.metadata.fill_value, meta.fill_value), variant
          assert_same(ExZarr.Array.get_slice!(rewrite), expected, meta, variant)
        end
      end
    end
  end

  describe "ExZarr reads arrays zarrs writes:" do
    # zarrs_binary2zarr 0.8.1 hands zarrs 0.23 its input as u8 elements, which zarrs refuses
    # for any data type but uint8 (it panics: IncompatibleElementType); the other types are
    # written by zarrs_reencode above.
    test "zarrs_binary2zarr: uint8 arrays (plain, gzip, transposed, sharded zstd) from raw bytes",
         %{dir: dir} do
      transpose = ~s([{"name": "transpose", "configuration": {"order": [1, 0, 2]}}])

      for {name, shape, extra} <- [
            {"plain", {37, 21}, ["--chunk-shape", "8,8"]},
            {"gzip", {50, 3, 4}, ["--chunk-shape", "7,2,4", "--bytes-to-bytes-codecs", @gzip]},
            {"transposed", {9, 10, 11},
             ["--chunk-shape", "4,5,6", "--array-to-array-codecs", transpose]},
            {"sharded", {64, 40},
             ["--chunk-shape", "8,8", "--shard-shape", "32,40", "--bytes-to-bytes-codecs", @zstd]}
          ] do
        raw = data(:uint8, Tuple.product(shape), 11)
        input = Path.join(dir, "raw-#{name}.bin")
        File.write!(input, raw)
        out = Path.join(dir, "b2z-#{name}")

        args =
          ["--data-type", "uint8", "--fill-value", "0"] ++
            ["--array-shape", shape |> Tuple.to_list() |> Enum.join(",")] ++ extra ++ [out]

        ZarrsTools.run!("zarrs_binary2zarr", args, stdin: input)
        array = ExZarr.open!(path: out)
        assert array.metadata.dtype == :uint8
        assert array.metadata.shape == shape
        assert_same(ExZarr.Array.get_slice!(array), raw, array.metadata, name)
      end
    end

    # zarrs writes variable-length bytes as data type "bytes" with the fill value an array of
    # byte values ([] for the empty one), where zarr-python writes base64
    test "zarrs_reencode: variable-length bytes and strings, with their fill values",
         %{dir: dir} do
      for {dtype, fill, items} <- [
            {:bytes, "", [<<0, 255>>, "", "abc", <<1>>, "é"]},
            {:bytes, <<1, 2>>, [<<0, 255>>, "", "abc", <<1>>, <<1, 2>>]},
            {:string, "zz", ["é€", "", "abc", "zz", "𝄞"]}
          ] do
        src = Path.join(dir, "vlen-#{dtype}-#{byte_size(fill)}")

        array =
          ExZarr.create!(
            path: src,
            shape: {9},
            chunks: {2},
            dtype: dtype,
            fill_value: fill,
            overwrite: true
          )

        :ok = ExZarr.Array.set_slice(array, items, start: {1}, stop: {6})
        expected = [fill] ++ items ++ List.duplicate(fill, 3)

        for {variant, args} <- [{"same", []}, {"sharded", ["-c", "2", "-s", "4"]}] do
          out = "#{src}-#{variant}"
          ZarrsTools.run!("zarrs_reencode", args ++ [src, out])
          rewrite = ExZarr.open!(path: out)
          assert {rewrite.metadata.dtype, rewrite.metadata.fill_value} == {dtype, fill}, out
          assert ExZarr.Array.get_slice!(rewrite) == expected, out
        end
      end
    end

    test "zarrs_reencode --data-type casts float64 to float32 and bfloat16 as ExZarr rounds",
         %{dir: dir} do
      src = Path.join(dir, "cast-src")

      opts = [
        shape: {31, 17},
        chunks: {8, 8},
        dtype: :float64,
        compressor: %{id: "zstd", level: 1}
      ]

      f64 = write_exzarr(src, opts, nil)
      values = for <<x::float-64-little <- f64>>, do: x

      for {dtype, encode} <- [
            {:float32, &<<&1::float-32-little>>},
            {:bfloat16, &<<LowPrecision.from_value(:bfloat16, &1) |> elem(1)::16-little>>}
          ] do
        out = Path.join(dir, "cast-#{dtype}")
        ZarrsTools.run!("zarrs_reencode", ["--data-type", Atom.to_string(dtype), src, out])
        array = ExZarr.open!(path: out)
        assert array.metadata.dtype == dtype
        expected = for x <- values, into: <<>>, do: encode.(x)
        assert_same(ExZarr.Array.get_slice!(array), expected, array.metadata, "#{dtype}")
      end
    end
  end

  # -- helpers ----------------------------------------------------------------------------------

  # Creates the array with ExZarr, writes the region (a deterministic pattern), and returns the
  # whole array as ExZarr reads it: the data where written, the fill value elsewhere.
  defp write_exzarr(path, opts, region) do
    opts = Keyword.merge([storage: :filesystem, path: path, zarr_format: 3], opts)
    array = ExZarr.create!(opts)
    shape = array.metadata.shape

    {start, stop} = region || {Tuple.duplicate(0, tuple_size(shape)), shape}

    n = Enum.product(Enum.zip_with(Tuple.to_list(start), Tuple.to_list(stop), &(&2 - &1)))

    :ok =
      ExZarr.Array.set_slice(array, data(array.metadata.dtype, n, 7), start: start, stop: stop)

    ExZarr.Array.get_slice!(array)
  end

  # The rewrites of an array of `meta`'s rank: the same encoding, resharded with zstd inside,
  # blosc (lz4, byte shuffle) with "." in chunk keys, and big-endian with gzip (for types wider
  # than a byte).
  defp variants(meta) do
    dims = fn n -> List.duplicate(n, tuple_size(meta.shape)) |> Enum.join(",") end
    size = ExZarr.DType.itemsize(meta.dtype)
    wide? = size > 1

    blosc =
      ~s([{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, ) <>
        ~s("shuffle": "shuffle", "typesize": #{size}, "blocksize": 0}}])

    [
      {"same", []},
      {"sharded-zstd", ["-c", dims.(3), "-s", dims.(6), "--bytes-to-bytes-codecs", @zstd]},
      {"blosc-dot-keys", ["-c", dims.(4), "--separator", ".", "--bytes-to-bytes-codecs", blosc]}
    ] ++
      if wide?,
        do: [
          {"big-gzip",
           ["-c", dims.(5), "--array-to-bytes-codec", @big, "--bytes-to-bytes-codecs", @gzip]}
        ],
        else: []
  end

  defp assert_zarrs_info(path, meta) do
    assert ZarrsTools.info!(path, "shape")["shape"] == Tuple.to_list(meta.shape)

    assert ZarrsTools.info!(path, "data-type")["data_type"] ==
             ExZarr.DType.to_v3(meta.dtype)

    fill = ZarrsTools.info!(path, "fill-value")["fill_value"]
    assert same_fill?(Interop.elixir_fill(fill), meta.fill_value)

    if names = meta.dimension_names do
      expected = Enum.map(names, &(&1 || :null))
      assert ZarrsTools.info!(path, "dimension-names")["dimension_names"] == expected
    end

    assert ZarrsTools.info!(path, "attributes") == decode_nulls(meta.attributes)
  end

  defp decode_nulls(map) when is_map(map), do: Map.new(map, fn {k, v} -> {k, decode_nulls(v)} end)
  defp decode_nulls(list) when is_list(list), do: Enum.map(list, &decode_nulls/1)
  defp decode_nulls(nil), do: :null
  defp decode_nulls(other), do: other

  defp same_fill?(a, b) when is_number(a) and is_number(b), do: a == b
  defp same_fill?({a, b}, [c, d]), do: same_fill?(a, c) and same_fill?(b, d)
  defp same_fill?([a, b], {c, d}), do: same_fill?(a, c) and same_fill?(b, d)
  defp same_fill?(a, b), do: a == b

  defp assert_same(got, expected, meta, what) do
    size = ExZarr.DType.itemsize(meta.dtype)
    diff = Interop.explain_diff(expected, got, size, Tuple.to_list(meta.shape))
    assert diff == "", "#{what}: #{diff}"
  end

  # `n` elements of `dtype`, little-endian, from a fixed seed: finite values for the floats
  # (their bit patterns then survive any cast and comparison), 0/1 for bool.
  defp data(dtype, n, seed) do
    :rand.seed(:exsss, {seed, n, 3})

    for i <- 1..n//1, into: <<>> do
      x = (:math.sin(i / 7) * 40 + :rand.uniform() - 0.5) * 1.0
      element(dtype, x)
    end
  end

  defp element(:bool, x), do: <<if(x > 0, do: 1, else: 0)>>
  defp element(:float64, x), do: <<x::float-64-little>>
  defp element(:float32, x), do: <<x::float-32-little>>
  defp element(:float16, x), do: <<x::float-16-little>>
  defp element(:complex64, x), do: <<x::float-32-little, -x / 3::float-32-little>>

  defp element(:bfloat16, x) do
    <<bits::16, _::16>> = <<x::float-32>>
    <<bits::16-little>>
  end

  defp element(int, x) do
    bits = ExZarr.DType.itemsize(int) * 8
    <<round(x * 1000)::size(bits)-little>>
  end
end
