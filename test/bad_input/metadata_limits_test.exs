defmodule ExZarr.BadInput.MetadataLimitsTest do
  @moduledoc """
  Sizes in hostile metadata (`ExZarr.Limits`): data types of 2^40-byte items, structured types
  with huge fields, more than 64 dimensions, extents beyond int64 and chunks beyond memory are
  refused when the array is opened or created, with the limit they exceed, before anything is
  sized from them. Documents that used to abort the VM are opened in a child BEAM, so that an
  abort fails the test instead of the test run.
  """
  use ExUnit.Case, async: true

  import Bitwise

  alias ExZarr.Test.{ChildBeam, Interop}

  @t40 1 <<< 40

  @v2 %{
    "zarr_format" => 2,
    "shape" => [8],
    "chunks" => [4],
    "dtype" => "<i4",
    "compressor" => nil,
    "fill_value" => 0,
    "order" => "C",
    "filters" => nil
  }

  @v3 %{
    "zarr_format" => 3,
    "node_type" => "array",
    "shape" => [8],
    "data_type" => "int32",
    "chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => [4]}},
    "chunk_key_encoding" => %{"name" => "default"},
    "fill_value" => 0,
    "codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}]
  }

  # {label, file, document, expected error reason (a pattern's text, matched in the child)}
  @cases [
    {"v2 |V2^40", ".zarray", %{@v2 | "dtype" => "|V#{@t40}", "fill_value" => nil},
     "{:too_large, :itemsize, #{@t40}, 2147483647}"},
    {"v2 <U2^40", ".zarray", %{@v2 | "dtype" => "<U#{@t40}", "fill_value" => nil},
     "{:too_large, :itemsize, #{4 * @t40}, 2147483647}"},
    {"v2 |S2^31", ".zarray", %{@v2 | "dtype" => "|S#{1 <<< 31}", "fill_value" => nil},
     "{:too_large, :itemsize, #{1 <<< 31}, 2147483647}"},
    {"v2 structured with a 2^40-element subarray field", ".zarray",
     %{@v2 | "dtype" => [["a", "<f8", [@t40]]], "fill_value" => nil},
     "{:too_large, :itemsize, #{8 * @t40}, 2147483647}"},
    {"v2 structured with a 2^40-byte field", ".zarray",
     %{@v2 | "dtype" => [["a", "|V#{@t40}"]], "fill_value" => nil}, "{:unsupported_dtype,"},
    {"v2 65 dimensions", ".zarray",
     %{@v2 | "shape" => List.duplicate(1, 65), "chunks" => List.duplicate(1, 65)},
     "{:too_many_dimensions, 65, [max: 64]}"},
    {"v2 shape beyond int64", ".zarray", %{@v2 | "shape" => [1 <<< 64]},
     "{:too_large, :shape, #{1 <<< 64}, #{(1 <<< 63) - 1}}"},
    {"v2 chunks beyond int64", ".zarray", %{@v2 | "shape" => [8], "chunks" => [1 <<< 63]},
     "{:too_large, :chunks, #{1 <<< 63}, #{(1 <<< 63) - 1}}"},
    {"v2 chunks beyond memory", ".zarray", %{@v2 | "shape" => [@t40 * 8], "chunks" => [@t40 * 4]},
     "{:too_large, :chunk, #{@t40 * 16}, "},
    {"v2 fill value beyond uint8", ".zarray", %{@v2 | "dtype" => "|u1", "fill_value" => 256},
     "{:invalid_fill_value, :uint8, 256}"},
    {"v2 fill value longer than |S2", ".zarray",
     %{@v2 | "dtype" => "|S2", "fill_value" => Base.encode64("abc")}, "{:invalid_fill_value,"},
    {"v3 null_terminated_bytes 2^40", "zarr.json",
     %{
       @v3
       | "data_type" => %{
           "name" => "null_terminated_bytes",
           "configuration" => %{"length_bytes" => @t40}
         },
         "fill_value" => ""
     }, "{:too_large, :itemsize, #{@t40}, 2147483647}"},
    {"v3 raw_bytes 2^40", "zarr.json",
     %{
       @v3
       | "data_type" => %{"name" => "raw_bytes", "configuration" => %{"length_bytes" => @t40}},
         "fill_value" => ""
     }, "{:too_large, :itemsize, #{@t40}, 2147483647}"},
    {"v3 fixed_length_utf32 2^40", "zarr.json",
     %{
       @v3
       | "data_type" => %{
           "name" => "fixed_length_utf32",
           "configuration" => %{"length_bytes" => @t40}
         },
         "fill_value" => ""
     }, "{:too_large, :itemsize, #{@t40}, 2147483647}"},
    {"v3 structured with a 2^40-element subarray field", "zarr.json",
     %{
       @v3
       | "data_type" => %{
           "name" => "structured",
           "configuration" => %{"fields" => [["a", "float64", [@t40]]]}
         },
         "fill_value" => ""
     }, "{:too_large, :itemsize, #{8 * @t40}, 2147483647}"},
    {"v3 65 dimensions", "zarr.json",
     %{
       @v3
       | "shape" => List.duplicate(1, 65),
         "chunk_grid" => %{
           "name" => "regular",
           "configuration" => %{"chunk_shape" => List.duplicate(1, 65)}
         }
     }, "{:too_many_dimensions, 65, [max: 64]}"},
    {"v3 shape beyond int64", "zarr.json", %{@v3 | "shape" => [1 <<< 70]},
     "{:too_large, :shape, #{1 <<< 70}, "},
    {"v3 chunks beyond memory", "zarr.json",
     %{
       @v3
       | "shape" => [@t40 * 8],
         "chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => [@t40 * 4]}}
     }, "{:too_large, :chunk, #{@t40 * 16}, "},
    {"v3 sharded, inner chunks beyond memory", "zarr.json",
     %{
       @v3
       | "shape" => [@t40 * 8],
         "chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => [@t40 * 8]}},
         "codecs" => [
           %{
             "name" => "sharding_indexed",
             "configuration" => %{
               "chunk_shape" => [@t40 * 4],
               "codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}],
               "index_codecs" => [
                 %{"name" => "bytes", "configuration" => %{"endian" => "little"}},
                 %{"name" => "crc32c"}
               ]
             }
           }
         ]
     }, "{:too_large, :chunk, #{@t40 * 16}, "},
    {"v3 int8 fill value 128", "zarr.json", %{@v3 | "data_type" => "int8", "fill_value" => 128},
     "{:invalid_fill_value, :int8, 128}"},
    {"v3 float32 fill value of 6 hex digits", "zarr.json",
     %{@v3 | "data_type" => "float32", "fill_value" => "0x7fc000"},
     "{:invalid_fill_value, :float32"}
  ]

  test "hostile sizes in metadata are refused on open, naming the limit" do
    dir = Interop.tmp_dir!("metadata-limits")
    on_exit(fn -> File.rm_rf!(dir) end)

    paths =
      for {{label, file, doc, _expected}, i} <- Enum.with_index(@cases) do
        path = Path.join(dir, "#{i}.zarr")
        File.mkdir_p!(path)
        File.write!(Path.join(path, file), Interop.encode_json(doc))
        {label, path}
      end

    code = """
    for path <- System.argv() do
      IO.puts(path <> "\\t" <> inspect(ExZarr.open(path: path), limit: 20, printable_limit: 80))
    end
    """

    {out, status} = ChildBeam.run(code, Enum.map(paths, &elem(&1, 1)))
    assert status == 0, out

    results =
      for line <- String.split(out, "\n", trim: true),
          [p, r] <- [String.split(line, "\t")],
          into: %{},
          do: {p, r}

    for {{label, _file, _doc, expected}, {label, path}} <- Enum.zip(@cases, paths) do
      result = Map.fetch!(results, path)
      assert result =~ "{:error, " <> expected, "#{label}: #{result}"
    end
  end

  describe "create" do
    test "refuses what open refuses, naming the limit" do
      create = &ExZarr.create(Keyword.merge([storage: :memory, shape: {8}], &1))

      assert {:error, {:too_many_dimensions, 65, max: 64}} =
               create.(shape: List.to_tuple(List.duplicate(1, 65)))

      assert {:error, {:too_large, :itemsize, @t40, _}} = create.(dtype: {:raw_bytes, @t40})
      assert {:error, {:too_large, :itemsize, _, _}} = create.(dtype: {:fixed_utf32, @t40})

      assert {:error, {:too_large, :itemsize, _, _}} =
               create.(dtype: {:structured, [{"a", :float64, :little, {@t40}}]})

      # a field of a type too large on its own (DType.itemsize/1 raised on it)
      for field <- [{:raw_bytes, @t40}, {:fixed_utf32, @t40}, {:fixed_bytes, 1 <<< 63}] do
        for format <- [2, 3] do
          assert {:error, {:too_large, :itemsize, _, _}} =
                   create.(zarr_format: format, dtype: {:structured, [{"a", field, nil, {}}]})
        end
      end

      refute ExZarr.DType.valid?({:structured, [{"a", {:raw_bytes, @t40}, nil, {}}]})

      assert {:error, {:too_large, :shape, _, _}} = create.(shape: {1 <<< 63})
      assert {:error, {:too_large, :chunks, _, _}} = create.(shape: {8}, chunks: {1 <<< 63})
      assert {:error, {:too_large, :chunk, _, _}} = create.(shape: {@t40}, chunks: {@t40})
      assert {:error, {:invalid_option, :shape, {1.5}}} = create.(shape: {1.5})
      assert {:error, {:invalid_option, :shape, {-1}}} = create.(shape: {-1})
      assert {:error, {:invalid_option, :chunks, {0}}} = create.(chunks: {0})

      assert {:error, {:invalid_option, :fill_value, 256}} =
               create.(dtype: :uint8, fill_value: 256)

      assert {:error, {:invalid_option, :fill_value, "abc"}} =
               create.(dtype: {:fixed_bytes, 2}, fill_value: "abc")
    end

    test "chunks an array->array codec shrinks must fit in memory before it" do
      # stored (packed or cast) they would fit; decoded they would not
      n = 4 * ExZarr.Limits.max_bytes()

      assert {:error, {:too_large, :chunk, ^n, _}} =
               ExZarr.create(
                 storage: :memory,
                 shape: {n},
                 dtype: :bool,
                 filters: [%{id: "packbits"}],
                 compressor: nil
               )

      assert {:error, {:too_large, :chunk, _, _}} =
               ExZarr.create(
                 storage: :memory,
                 shape: {div(n, 8)},
                 dtype: :float64,
                 filters: [%{id: "astype", encode_dtype: "|u1"}]
               )
    end

    test "64 dimensions work end to end (the native limit)" do
      shape = List.to_tuple(List.duplicate(1, 64) |> List.replace_at(63, 3))

      {:ok, a} =
        ExZarr.create(
          storage: :memory,
          shape: shape,
          dtype: :uint8,
          chunks: List.to_tuple(List.duplicate(1, 64))
        )

      :ok = ExZarr.Array.set_slice(a, <<1, 2, 3>>)
      assert {:ok, <<1, 2, 3>>} = ExZarr.Array.get_slice(a)

      assert {:ok, <<2>>} =
               ExZarr.Array.get_slice(a,
                 start: put_elem(Tuple.duplicate(0, 64), 63, 1),
                 stop: put_elem(Tuple.duplicate(1, 64), 63, 2)
               )
    end
  end
end
