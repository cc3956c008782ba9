defmodule ExZarr.Array.ReadTest do
  # Multi-chunk reads go through the native output buffer: chunks decoded by the NIF itself
  # (bytes + one compressor, either byte order) or by the codec pipeline (any other chain),
  # missing and edge chunks, every selection shape; checked against the chunks read one by
  # one and assembled with copy_regions.
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Codec.Pipeline, Native, Shape}

  @bytes_le %{name: "bytes", configuration: %{"endian" => "little"}}
  @bytes_be %{name: "bytes", configuration: %{"endian" => "big"}}

  @pipelines [
    {"zstd", [@bytes_le, %{name: "zstd", configuration: %{"level" => 1}}], :zstd},
    {"big-endian zstd", [@bytes_be, %{name: "zstd", configuration: %{}}], {:zstd, 4}},
    {"blosc",
     [
       @bytes_le,
       %{
         name: "blosc",
         configuration: %{"cname" => "lz4", "shuffle" => "shuffle", "typesize" => 4}
       }
     ], :blosc},
    {"gzip", [@bytes_le, %{name: "gzip", configuration: %{"level" => 1}}], :gzip},
    {"uncompressed", [@bytes_le], :raw},
    {"big-endian uncompressed", [@bytes_be], {:raw, 4}},
    {"transpose then zstd (pipeline)",
     [
       %{name: "transpose", configuration: %{"order" => [2, 0, 1]}},
       @bytes_le,
       %{name: "zstd", configuration: %{}}
     ], nil},
    {"zstd then crc32c (pipeline)",
     [@bytes_le, %{name: "zstd", configuration: %{}}, %{name: "crc32c", configuration: %{}}], nil}
  ]

  defp create(codecs, opts \\ []) do
    {:ok, a} =
      ExZarr.create(
        Keyword.merge(
          [
            shape: {9, 13, 10},
            chunks: {4, 5, 10},
            dtype: :int32,
            storage: :memory,
            codecs: codecs,
            fill_value: -7
          ],
          opts
        )
      )

    a
  end

  # Every selection's expected bytes: the chunks read one by one (fill where missing) and
  # copied into place.
  defp expected(a, opts) do
    {:ok, sel, parts} = Array.plan(a, opts)
    fill = a.fill_element

    pieces =
      for p <- parts do
        data =
          case Array.read_chunk(a, p.chunk) do
            {:ok, data} -> data
            {:error, :not_found} -> :binary.copy(fill, Shape.product(a.metadata.chunks))
          end

        {data, a.metadata.chunks, p.chunk_start, p.out_start, p.count}
      end

    {:ok, bin} = Native.copy_regions(sel.shape, byte_size(fill), {:fill, fill}, pieces)
    bin
  end

  defp random_box(shape) do
    pairs =
      for n <- Tuple.to_list(shape) do
        s = Enum.random(0..(n - 1))
        {s, Enum.random((s + 1)..n)}
      end

    [
      start: List.to_tuple(Enum.map(pairs, &elem(&1, 0))),
      stop: List.to_tuple(Enum.map(pairs, &elem(&1, 1)))
    ]
  end

  for {label, codecs, decoder} <- @pipelines do
    test "#{label}: every selection equals the chunks assembled one by one" do
      a = create(unquote(Macro.escape(codecs)))
      assert Pipeline.native_decoder(a.pipeline) == unquote(Macro.escape(decoder))
      # Some chunks written, the rest missing (fill value); edge chunks along two axes.
      :ok =
        Array.set_slice(a, :crypto.strong_rand_bytes(5 * 8 * 10 * 4),
          start: {2, 3, 0},
          stop: {7, 11, 10}
        )

      selections =
        [[], [start: {0, 0, 0}, stop: {4, 13, 10}], [start: {4, 0, 0}, stop: {8, 5, 10}]] ++
          for(_ <- 1..30, do: random_box({9, 13, 10}))

      for opts <- selections, conc <- [1, 4] do
        assert Array.get_slice(a, [max_concurrency: conc] ++ opts) == {:ok, expected(a, opts)},
               inspect(opts)
      end
    end
  end

  test "v2 arrays, both byte orders" do
    for dtype <- ["<f8", ">f8"], compressor <- [nil, %{id: "zstd", level: 1}, %{id: "lz4"}] do
      {:ok, a} =
        ExZarr.create(
          shape: {10, 6},
          chunks: {3, 6},
          dtype: :float64,
          zarr_format: 2,
          storage: :memory,
          compressor: compressor,
          fill_value: 0.5
        )

      a = if dtype == ">f8", do: big_endian_v2(a), else: a
      decoder = Pipeline.native_decoder(a.pipeline)
      codec = if compressor, do: String.to_atom(compressor.id), else: :raw
      assert decoder == if(dtype == ">f8", do: {codec, 8}, else: codec)
      :ok = Array.set_slice(a, :crypto.strong_rand_bytes(6 * 6 * 8), start: {1, 0}, stop: {7, 6})
      assert Array.get_slice(a) == {:ok, expected(a, [])}

      assert Array.get_slice(a, start: {2, 1}, stop: {10, 5}) ==
               {:ok, expected(a, start: {2, 1}, stop: {10, 5})}
    end
  end

  defp big_endian_v2(a) do
    {:ok, a} =
      Array.new(
        %{a.metadata | codecs: [@bytes_be | tl(a.metadata.codecs)]},
        a.storage
      )

    a
  end

  test "a chunk larger than the per-thread scratch buffer that is kept (16 MiB)" do
    {:ok, a} =
      ExZarr.create(
        shape: {2, 2100, 1024},
        chunks: {1, 2100, 1024},
        dtype: :float64,
        storage: :memory,
        compressor: %{id: "zstd", level: 1}
      )

    data = :binary.copy(:crypto.strong_rand_bytes(1024 * 8), 2 * 2100)
    :ok = Array.set_slice(a, data)
    assert Array.get_slice(a) == {:ok, data}
    opts = [start: {0, 10, 3}, stop: {2, 900, 1000}]
    assert Array.get_slice(a, opts) == {:ok, expected(a, opts)}
  end

  test "a corrupt chunk is an error naming its key; the other chunks still read" do
    a = create([@bytes_le, %{name: "zstd", configuration: %{}}])
    :ok = Array.set_slice(a, :crypto.strong_rand_bytes(9 * 13 * 10 * 4))
    {:ok, stored} = ExZarr.Storage.get(a.storage, "c/1/1/0")

    :ok =
      ExZarr.Storage.put(a.storage, "c/1/1/0", binary_part(stored, 0, div(byte_size(stored), 2)))

    assert {:error, {:corrupt_chunk, "c/1/1/0", {:zstd, _}}} = Array.get_slice(a)
    assert {:ok, _} = Array.get_slice(a, start: {0, 0, 0}, stop: {4, 13, 10})

    :ok = ExZarr.Storage.put(a.storage, "c/1/1/0", <<1, 2, 3>>)

    assert {:error, {:corrupt_chunk, "c/1/1/0", _}} =
             Array.get_slice(a, start: {3, 4, 0}, stop: {6, 6, 2})
  end

  test "a raw chunk of the wrong size is an error" do
    a = create([@bytes_le])
    :ok = Array.set_slice(a, :crypto.strong_rand_bytes(9 * 13 * 10 * 4))
    :ok = ExZarr.Storage.put(a.storage, "c/0/0/0", <<0::32>>)
    assert {:error, {:corrupt_chunk, "c/0/0/0", _}} = Array.get_slice(a)
  end
end
