defmodule ExZarr.Codec.PipelineTest do
  use ExUnit.Case, async: true

  alias ExZarr.Codec.{Chunk, Pipeline}
  alias ExZarr.Storage

  doctest ExZarr.Codec
  doctest ExZarr.Codec.Pipeline
  doctest ExZarr.Codec.Chunk

  @bytes %{name: "bytes", configuration: %{"endian" => "little"}}

  defp pipeline(codecs, shape \\ {4, 4}, dtype \\ :uint8, fill \\ 0) do
    spec = %{shape: shape, dtype: dtype, fill_value: fill, decoded_size: nil}
    {:ok, p} = Pipeline.new(codecs, spec)
    p
  end

  defp store do
    {:ok, store} = Storage.new(:memory, [])
    store
  end

  test "read_work: a whole chunk per part, the box's bytes for parts whose chunk is cached" do
    p = pipeline([@bytes], {512, 512}, :float64, 0.0)
    parts = [%{count: {100, 100}, chunk_start: {0, 0}}, %{count: {100, 20}, chunk_start: {5, 0}}]
    assert Pipeline.read_work(p, parts) == 2 * 512 * 512 * 8
    assert Pipeline.read_work(p, parts, fn _ -> true end) == (100 * 100 + 100 * 20) * 8

    assert Pipeline.read_work(p, parts, &(&1.count == {100, 20})) ==
             512 * 512 * 8 + 100 * 20 * 8
  end

  test "each codec states its native decoder; the pipeline combines them or has none" do
    assert Pipeline.native_decoder(pipeline([@bytes])) == :raw

    assert Pipeline.native_decoder(pipeline([@bytes, %{name: "gzip", configuration: %{}}])) ==
             :gzip

    assert Pipeline.native_decoder(
             pipeline([@bytes, %{name: "zstd", configuration: %{}}], {4}, :int32)
           ) ==
             :zstd

    # a compressor the NIF does not run, two compressors, a filter before bytes: none
    assert Pipeline.native_decoder(pipeline([@bytes, %{name: "crc32c", configuration: %{}}])) ==
             nil

    two = [@bytes, %{name: "zstd", configuration: %{}}, %{name: "gzip", configuration: %{}}]
    assert Pipeline.native_decoder(pipeline(two)) == nil

    transpose = %{name: "transpose", configuration: %{"order" => [1, 0]}}
    assert Pipeline.native_decoder(pipeline([transpose, @bytes])) == nil
  end

  test "sharding alone reads in part; with codecs around it, whole" do
    config = %{"chunk_shape" => [2, 2], "codecs" => [%{"name" => "bytes"}]}
    sharding = %{name: "sharding_indexed", configuration: config}
    p = pipeline([sharding])
    assert Pipeline.supports_partial_decode?(p)
    assert Pipeline.inner_chunk_shape(p) == {:ok, {2, 2}}

    refute Pipeline.supports_partial_decode?(
             pipeline([sharding, %{name: "crc32c", configuration: %{}}])
           )

    assert Pipeline.inner_chunk_shape(pipeline([@bytes])) == {:error, :not_sharded}
  end

  test "inner_chunks cuts a decoded shard into the inner chunks that start inside the array" do
    config = %{"chunk_shape" => [2, 2], "codecs" => [%{"name" => "bytes"}]}
    p = pipeline([%{name: "sharding_indexed", configuration: config}])
    shard = :binary.list_to_bin(Enum.to_list(0..15))

    # the shard at {4, 0} of a {6, 3} array: inner rows 2 (inside) and 3 (outside)
    assert Pipeline.inner_chunks(p, shard, {4, 4}, {4, 0}, {6, 3}) ==
             {:ok, [{{2, 0}, <<0, 1, 4, 5>>}, {{2, 1}, <<2, 3, 6, 7>>}]}

    assert Pipeline.inner_chunks(pipeline([@bytes]), shard, {4, 4}, {0, 0}, {4, 4}) ==
             {:error, :not_sharded}
  end

  test "read puts a box of a stored chunk into an output; a missing chunk fills it" do
    p = pipeline([@bytes, %{name: "zstd", configuration: %{}}], {2, 2}, :uint8, 9)
    s = store()
    {:ok, encoded} = Pipeline.encode(p, <<1, 2, 3, 4>>)
    :ok = Storage.put(s, "c/0", encoded)
    {:ok, out} = Pipeline.output(p, {2, 3})
    assert {:ok, []} = Pipeline.read(p, Chunk.new(s, "c/0"), {{0, 0}, {0, 0}, {2, 2}}, out)
    assert {:ok, []} = Pipeline.read(p, Chunk.new(s, "c/1"), {{0, 0}, {0, 2}, {2, 1}}, out)
    assert Pipeline.finish(out, []) == {:ok, <<1, 2, 9, 3, 4, 9>>}

    :ok = Storage.put(s, "c/2", "junk")
    {:ok, out} = Pipeline.output(p, {2, 2})

    assert {:error, {:corrupt_chunk, "c/2", _}} =
             Pipeline.read(p, Chunk.new(s, "c/2"), {{0, 0}, {0, 0}, {2, 2}}, out)
  end

  test "write: a whole chunk is its caller's bytes, a piece is merged, all fill is deleted" do
    p = pipeline([@bytes])
    s = store()
    chunk = Chunk.new(s, "c/0")
    data = :binary.copy(<<5>>, 32)

    # a 16x16 chunk that is rows 16..31 of a 64x16 selection: one run of the caller's data
    big = pipeline([@bytes], {16, 16})
    selection = :binary.copy(<<5>>, 64 * 16)
    piece = {selection, {64, 16}, {16, 0}, {0, 0}, {16, 16}}
    {:ok, encoded} = Pipeline.encode_chunk(big, nil, [piece], false)
    assert encoded == binary_part(selection, 256, 256)
    assert :binary.referenced_byte_size(encoded) == 64 * 16

    :ok = Pipeline.write(p, chunk, {data, {8, 4}, {1, 0}, {0, 0}, {4, 4}}, {4, 4}, [])
    :ok = Pipeline.write(p, chunk, {<<7, 7>>, {1, 2}, {0, 0}, {1, 1}, {1, 2}}, {4, 4}, [])
    assert {:ok, <<5, 5, 5, 5, 5, 7, 7, 5>> <> _} = Pipeline.read_chunk(p, chunk)

    zeros = :binary.copy(<<0>>, 16)
    :ok = Pipeline.write(p, chunk, {zeros, {4, 4}, {0, 0}, {0, 0}, {4, 4}}, {4, 4}, [])
    assert Pipeline.read_chunk(p, chunk) == {:error, :not_found}

    :ok =
      Pipeline.write(p, chunk, {zeros, {4, 4}, {0, 0}, {0, 0}, {4, 4}}, {4, 4}, keep_fill: true)

    assert Pipeline.read_chunk(p, chunk) == {:ok, zeros}
  end

  test "write: a compressor gathers a chunk that is a box of the caller's data, fill or not" do
    zstd = %{name: "zstd", configuration: %{"level" => 3}}
    p = pipeline([@bytes, zstd], {4, 8}, :float64, 0.0)
    data = for i <- 1..(16 * 32), into: <<>>, do: <<i * 0.5::float-64-little>>
    piece = {data, {16, 32}, {4, 8}, {0, 0}, {4, 8}}
    {:ok, copied} = ExZarr.Native.copy_regions({4, 8}, 8, {:fill, <<0::64>>}, [piece])
    {:ok, encoded} = Pipeline.encode_chunk(p, nil, [piece], false)

    assert IO.iodata_to_binary(encoded) ==
             IO.iodata_to_binary(elem(Pipeline.encode(p, copied), 1))

    {:ok, cache} = ExZarr.ChunkCache.attach(1_000_000)
    chunk = Chunk.new(store(), "c/1/1")
    :ok = Pipeline.write(p, chunk, piece, {4, 8}, cache: cache)
    assert Pipeline.read_chunk(p, chunk) == {:ok, copied}
    assert Pipeline.fetch_decoded(p, chunk, cache) == {:ok, copied}

    # all fill, or fill but for the last element (copied: its first element is fill)
    zeros = :binary.copy(<<0>>, 16 * 32 * 8)
    :ok = Pipeline.write(p, chunk, {zeros, {16, 32}, {4, 8}, {0, 0}, {4, 8}}, {4, 8}, [])
    assert Pipeline.read_chunk(p, chunk) == {:error, :not_found}
    last = (7 * 32 + 15) * 8

    one =
      binary_part(zeros, 0, last) <>
        <<1.0::float-64-little>> <> binary_part(zeros, last + 8, 16 * 32 * 8 - last - 8)

    :ok = Pipeline.write(p, chunk, {one, {16, 32}, {4, 8}, {0, 0}, {4, 8}}, {4, 8}, [])
    assert {:ok, <<0::size(31 * 64), 1.0::float-64-little>>} = Pipeline.read_chunk(p, chunk)

    # the NIF checks the box it is given
    assert_raise ArgumentError, fn ->
      ExZarr.Native.zstd_compress({:gather, data, {16, 32}, {13, 8}, {4, 8}, 8}, 3, false)
    end
  end

  test "keep leaves the box at the origin and fills the rest; a chunk not stored stays so" do
    p = pipeline([@bytes])
    s = store()
    chunk = Chunk.new(s, "c/0")

    :ok =
      Pipeline.write(
        p,
        chunk,
        {:binary.copy(<<3>>, 16), {4, 4}, {0, 0}, {0, 0}, {4, 4}},
        {4, 4},
        []
      )

    :ok = Pipeline.keep(p, chunk, {2, 3}, [])

    assert Pipeline.read_chunk(p, chunk) ==
             {:ok, <<3, 3, 3, 0, 3, 3, 3, 0>> <> :binary.copy(<<0>>, 8)}

    assert Pipeline.keep(p, Chunk.new(s, "c/9"), {1, 1}, []) == :ok
    assert Storage.get(s, "c/9") == {:error, :not_found}
  end

  test "fill? compares bitwise, but any NaN matches a NaN fill value" do
    nan = pipeline([@bytes], {2}, :float32, :nan)
    other_nan = <<0x7FC00001::32-little>>
    assert Pipeline.fill?(nan, other_nan <> <<0x7FC00000::32-little>>)
    refute Pipeline.fill?(nan, other_nan <> <<1.0::float-32-little>>)
    zero = pipeline([@bytes], {2}, :float32, 0.0)
    refute Pipeline.fill?(zero, <<-0.0::float-32-little, 0.0::float-32-little>>)
  end

  test "variable-length items: pieces, fill and the chunks in flight memory allows" do
    p = pipeline([%{name: "vlen-utf8", configuration: %{}}], {2, 2}, :string, "")
    assert {:ok, {"a", "b", "c"}} = Pipeline.check_data(p, ["a", "b", "c"], 3)
    assert {:error, {:wrong_item_count, _}} = Pipeline.check_data(p, ["a"], 3)
    # a piece carries only the items of its chunk
    assert Pipeline.piece(p, {"a", "b", "c", "d"}, {1, 4}, {{0, 0}, {0, 2}, {1, 2}}) ==
             {{"c", "d"}, {1, 2}, {0, 0}, {0, 0}, {1, 2}}

    assert Pipeline.fill_chunk(p) == {:ok, ["", "", "", ""]}
    # items that are not all binaries, or not a list, are the serializer's error
    assert Pipeline.encode(p, ["a", 1, "c", "d"]) ==
             {:error, {:encode, "vlen-utf8", {:invalid_item, 1, 1}}}

    assert {:error, {:encode, "vlen-utf8", {:not_a_list, _}}} =
             Pipeline.encode(p, ["a", "b" | "c"])

    assert {:ok, _} = Pipeline.encode(p, {"a", "b", "c", "d"})
    assert is_integer(Pipeline.max_in_flight(p))
    assert Pipeline.max_in_flight(pipeline([@bytes])) == :infinity
  end

  test "decode_to_send: items stay their checked layout, which reads assemble as the items" do
    zstd = %{name: "zstd", configuration: %{"level" => 1}}
    p = pipeline([%{name: "vlen-utf8", configuration: %{}}, zstd], {2, 2}, :string, "")
    {:ok, stored} = Pipeline.encode(p, ["a", "b", "c", "d"])
    assert {:ok, {:layout, layout}} = Pipeline.decode_to_send(p, stored)
    assert is_binary(layout)
    assert Pipeline.decode(p, stored) == {:ok, {"a", "b", "c", "d"}}

    # a box of the layout and a box of the items assemble alike
    {:ok, out} = Pipeline.output(p, {2, 3})
    {:ok, pieces} = Pipeline.put_decoded(p, {:layout, layout}, {{0, 1}, {0, 0}, {2, 1}}, out)
    {:ok, more} = Pipeline.put_decoded(p, {"e", "f", "g", "h"}, {{0, 0}, {0, 1}, {2, 2}}, out)
    assert Pipeline.finish(out, pieces ++ more) == {:ok, ["b", "e", "f", "d", "g", "h"]}

    # what the layout's check refuses is decode/2's error
    compressed = fn bytes ->
      {:ok, stored} = Pipeline.encode(pipeline([@bytes, zstd], {byte_size(bytes)}), bytes)
      stored
    end

    short = compressed.(<<4::32-little, 1::32-little, "a">>)
    assert {:error, {:decode, "vlen-utf8", {:truncated, _}}} = Pipeline.decode_to_send(p, short)
    assert Pipeline.decode_to_send(p, short) == Pipeline.decode(p, short)
    latin1 = compressed.(<<4::32-little, 1::32-little, 0xE9, 0::96>>)

    assert Pipeline.decode_to_send(p, latin1) ==
             {:error, {:decode, "vlen-utf8", {:invalid_utf8, <<0xE9>>}}}

    assert Pipeline.decode_to_send(p, latin1) == Pipeline.decode(p, latin1)
    # packed data decodes as decode/2 does
    packed = pipeline([@bytes, zstd])
    {:ok, stored} = Pipeline.encode(packed, :binary.copy(<<7>>, 16))
    assert Pipeline.decode_to_send(packed, stored) == Pipeline.decode(packed, stored)
  end

  test "chunks: spans of a stored value read ranges relative to the chunk" do
    s = store()
    :ok = Storage.put(s, "k", "0123456789")
    span = Chunk.span(Chunk.new(s, "k"), 2, 6)
    assert Chunk.get(span) == {:ok, "234567"}
    assert {:ok, ["34", "67"], _} = Chunk.get_ranges_with_generation(span, [{1, 2}, {:suffix, 2}])
    assert Chunk.get(Chunk.span(span, 1, 2)) == {:ok, "34"}
    refute Chunk.stored_value?(span)
    assert Chunk.stored_value?(Chunk.new(s, "k"))
    assert Chunk.ranges?(span)
  end

  test "chunks know their object's generation and identity" do
    s = store()
    :ok = Storage.put(s, "k", "abc")
    chunk = Chunk.new(s, "k")
    {:ok, "abc", generation} = Chunk.get_with_generation(chunk)
    assert Chunk.current?(chunk, generation)
    :ok = Storage.put(s, "k", "abd")
    refute Chunk.current?(chunk, generation)
    refute Chunk.current?(chunk, nil)
    assert Chunk.identity(chunk) == Chunk.identity(Chunk.new(s, "k"))
    assert Chunk.identity(chunk) != Chunk.identity(Chunk.new(s, "j"))
  end
end
