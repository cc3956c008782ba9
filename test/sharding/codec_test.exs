defmodule ExZarr.Sharding.CodecTest do
  use ExUnit.Case, async: true

  alias ExZarr.Codecs.ShardingIndexed

  @empty 0xFFFFFFFFFFFFFFFF
  @bytes_le %{"name" => "bytes", "configuration" => %{"endian" => "little"}}

  defp init(shard_shape, chunk_shape, extra \\ %{}, dtype \\ :uint8, fill \\ 0) do
    config =
      Map.merge(
        %{"chunk_shape" => Tuple.to_list(chunk_shape), "codecs" => [%{"name" => "bytes"}]},
        extra
      )

    spec = %{shape: shard_shape, dtype: dtype, fill_value: fill, decoded_size: nil}
    ShardingIndexed.init(config, spec)
  end

  defp seq(n), do: :erlang.list_to_binary(Enum.map(0..(n - 1), &(rem(&1, 250) + 1)))

  defp pairs(index), do: for(<<o::64-little, n::64-little <- index>>, do: {o, n})

  test "a shard round trips; chunks are laid out in Morton order, the index at the end" do
    {:ok, s} = init({4, 4}, {2, 2})
    data = seq(16)
    {:ok, shard} = ShardingIndexed.encode(data, s)
    shard = IO.iodata_to_binary(shard)
    assert byte_size(shard) == 16 + 4 * 16 + 4

    # default index codecs: bytes little + crc32c
    <<body::binary-size(16), index::binary-size(64), crc::32-little>> = shard
    assert crc == ExZarr.Native.crc32c(index)
    # C order (0,0) (0,1) (1,0) (1,1) -> Morton positions 0, 1, 2, 3 (z: bit 0 is axis 0)
    assert pairs(index) == [{0, 4}, {8, 4}, {4, 4}, {12, 4}]
    assert binary_part(body, 4, 4) == <<9, 10, 13, 14>>
    assert ShardingIndexed.decode(shard, s) == {:ok, data}
  end

  test "index at the start: offsets count the index" do
    {:ok, s} = init({4}, {2}, %{"index_location" => "start", "index_codecs" => [@bytes_le]})

    {:ok, shard} = ShardingIndexed.encode(<<1, 2, 3, 4>>, s)
    shard = IO.iodata_to_binary(shard)
    assert <<32::64-little, 2::64-little, 34::64-little, 2::64-little, 1, 2, 3, 4>> = shard
    assert ShardingIndexed.decode(shard, s) == {:ok, <<1, 2, 3, 4>>}
  end

  test "inner chunks equal to the fill value are not stored; NaN matches a NaN fill" do
    {:ok, s} = init({4}, {2}, %{"index_codecs" => [@bytes_le]}, :uint8, 7)
    {:ok, shard} = ShardingIndexed.encode(<<7, 7, 1, 7>>, s)
    <<body::binary-size(2), index::binary>> = IO.iodata_to_binary(shard)
    assert body == <<1, 7>>
    assert pairs(index) == [{@empty, @empty}, {0, 2}]

    nan = <<0, 0, 0xC0, 0x7F>>
    other_nan = <<1, 0, 0xC0, 0xFF>>

    {:ok, f} =
      init({2}, {1}, %{"codecs" => [@bytes_le], "index_codecs" => [@bytes_le]}, :float32, :nan)

    {:ok, shard} = ShardingIndexed.encode(other_nan <> <<1.0::float-32-little>>, f)
    shard = IO.iodata_to_binary(shard)
    assert byte_size(shard) == 4 + 32
    assert ShardingIndexed.decode(shard, f) == {:ok, nan <> <<1.0::float-32-little>>}
  end

  test "a shard with every inner chunk empty is only an index and decodes as fill" do
    {:ok, s} = init({4}, {2}, %{"index_codecs" => [@bytes_le]}, :uint8, 3)
    {:ok, shard} = ShardingIndexed.encode(<<3, 3, 3, 3>>, s)
    shard = IO.iodata_to_binary(shard)
    assert pairs(shard) == [{@empty, @empty}, {@empty, @empty}]
    assert ShardingIndexed.decode(shard, s) == {:ok, <<3, 3, 3, 3>>}
  end

  test "Morton order of a non-power-of-two grid matches zarr-python's" do
    # zarr-python: _morton_order((3, 2)) = (0,0) (1,0) (0,1) (1,1) (2,0) (2,1)
    {:ok, s} = init({3, 2}, {1, 1}, %{"index_codecs" => [@bytes_le]})
    {:ok, shard} = ShardingIndexed.encode(<<1, 2, 3, 4, 5, 6>>, s)
    assert <<1, 3, 2, 4, 5, 6, _::binary>> = IO.iodata_to_binary(shard)
  end

  test "nested sharding round trips" do
    inner = %{
      "name" => "sharding_indexed",
      "configuration" => %{"chunk_shape" => [2, 2], "codecs" => [%{"name" => "bytes"}]}
    }

    {:ok, s} = init({8, 8}, {4, 4}, %{"codecs" => [inner]})
    data = seq(64)
    {:ok, shard} = ShardingIndexed.encode(data, s)
    assert ShardingIndexed.decode(IO.iodata_to_binary(shard), s) == {:ok, data}
  end

  test "configuration errors are reported" do
    assert {:error, {:chunk_shape_does_not_divide_shard, _}} = init({10}, {3})

    assert {:error, {:invalid_sharding_config, _}} =
             init({10}, {5}, %{"index_location" => "middle"})

    assert {:error, {:invalid_sharding_config, _}} = init({10}, {5}, %{"codecs" => []})

    assert {:error, {:variable_size_index_codec, "zstd"}} =
             init({10}, {5}, %{"index_codecs" => [@bytes_le, %{"name" => "zstd"}]})

    assert {:error, {:unsupported_codec, "nope"}} = init({10}, {5}, %{"codecs" => ["nope"]})
  end

  describe "corrupt shards give errors" do
    setup do
      {:ok, s} = init({4}, {2})
      {:ok, shard} = ShardingIndexed.encode(<<1, 2, 3, 4>>, s)
      %{s: s, shard: IO.iodata_to_binary(shard)}
    end

    # Rewrites the index (with a valid checksum) of a 2-chunk shard.
    defp with_index(shard, entries) do
      index = for {o, n} <- entries, into: <<>>, do: <<o::64-little, n::64-little>>
      binary_part(shard, 0, 4) <> index <> <<ExZarr.Native.crc32c(index)::32-little>>
    end

    test "bad crc32c", %{s: s, shard: shard} do
      <<head::binary-size(10), byte, rest::binary>> = shard
      bad = head <> <<Bitwise.bxor(byte, 1)>> <> rest
      assert {:error, {:corrupt_shard_index, {:index_codecs, _}}} = ShardingIndexed.decode(bad, s)
    end

    test "offsets past the end", %{s: s, shard: shard} do
      bad = with_index(shard, [{0, 2}, {3, 2}])
      assert {:error, {:corrupt_shard_index, _}} = ShardingIndexed.decode(bad, s)
      bad = with_index(shard, [{0, 2}, {@empty - 1, 2}])
      assert {:error, {:corrupt_shard_index, _}} = ShardingIndexed.decode(bad, s)
    end

    test "overlapping ranges", %{s: s, shard: shard} do
      bad = with_index(shard, [{0, 3}, {2, 2}])
      assert {:error, {:corrupt_shard_index, "overlapping" <> _}} = ShardingIndexed.decode(bad, s)
    end

    test "half-empty pairs", %{s: s, shard: shard} do
      bad = with_index(shard, [{0, 2}, {@empty, 2}])
      assert {:error, {:corrupt_shard_index, _}} = ShardingIndexed.decode(bad, s)
    end

    test "wrong index size", %{s: s, shard: shard} do
      assert {:error, {:corrupt_shard_index, _}} =
               ShardingIndexed.decode(binary_part(shard, 0, 10), s)

      assert {:error, {:corrupt_shard_index, _}} =
               ShardingIndexed.decode_index(s, binary_part(shard, 4, 30), nil)
    end

    test "an inner chunk of the wrong size", %{s: s, shard: shard} do
      bad = with_index(shard, [{0, 1}, {2, 2}])
      assert {:error, {:corrupt_inner_chunk, _}} = ShardingIndexed.decode(bad, s)
    end
  end
end
