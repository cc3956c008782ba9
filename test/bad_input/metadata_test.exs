defmodule ExZarr.BadInput.MetadataTest do
  @moduledoc """
  Malformed metadata: broken JSON, wrong-typed or out-of-range fields, missing keys, unknown
  must-understand extensions and unknown codecs. Opening gives `{:error, _}` (with the reason
  the design names for extensions and codecs) and leaves the store unchanged. Valid metadata
  and extensions marked `must_understand: false` are the controls that must open.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.{Interop, Snapshot}

  @v3 %{
    "zarr_format" => 3,
    "node_type" => "array",
    "shape" => [8, 8],
    "data_type" => "int32",
    "chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => [4, 4]}},
    "chunk_key_encoding" => %{"name" => "default", "configuration" => %{"separator" => "/"}},
    "fill_value" => 0,
    "codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}],
    "attributes" => %{}
  }

  @v2 %{
    "zarr_format" => 2,
    "shape" => [8, 8],
    "chunks" => [4, 4],
    "dtype" => "<i4",
    "compressor" => nil,
    "fill_value" => 0,
    "order" => "C",
    "filters" => nil
  }

  defp rect(config),
    do: %{"chunk_grid" => %{"name" => "rectilinear", "configuration" => config}}

  setup do
    dir = Interop.tmp_dir!("bad-metadata")
    on_exit(fn -> File.rm_rf!(dir) end)
    %{dir: dir, path: Path.join(dir, "a.zarr")}
  end

  defp put_meta(path, file, content) do
    File.mkdir_p!(path)
    bin = if is_binary(content), do: content, else: Interop.encode_json(content)
    File.write!(Path.join(path, file), bin)
    # a chunk beside the metadata, so "unchanged" covers data too
    File.write!(Path.join(path, "stray-chunk"), <<1, 2, 3>>)
  end

  defp open_fails(ctx, file, content) do
    put_meta(ctx.path, file, content)
    before = Snapshot.take(ctx.dir)
    result = ExZarr.open(path: ctx.path)
    assert Snapshot.diff(before, Snapshot.take(ctx.dir)) == []
    assert {:error, _} = result
    result
  end

  describe "controls" do
    test "the valid v3 metadata opens", ctx do
      put_meta(ctx.path, "zarr.json", @v3)
      assert {:ok, a} = ExZarr.open(path: ctx.path)
      assert a.metadata.shape == {8, 8}
    end

    test "the valid v2 metadata opens", ctx do
      put_meta(ctx.path, ".zarray", @v2)
      assert {:ok, a} = ExZarr.open(path: ctx.path)
      assert a.metadata.dtype == :int32
    end

    test "a rectilinear chunk grid opens", ctx do
      grid = rect(%{"kind" => "inline", "chunk_shapes" => [[[1, 3], 5], 8]})
      put_meta(ctx.path, "zarr.json", Map.merge(@v3, grid))
      assert {:ok, array} = ExZarr.open(path: ctx.path)
      assert array.metadata.chunks == {[1, 1, 1, 5], 8}
    end

    test "an unknown v3 field with must_understand: false is ignored", ctx do
      put_meta(ctx.path, "zarr.json", Map.put(@v3, "my_ext", %{"must_understand" => false}))
      assert {:ok, _} = ExZarr.open(path: ctx.path)
    end

    test "v2 filters [] is read as no filters", ctx do
      put_meta(ctx.path, ".zarray", Map.put(@v2, "filters", []))
      assert {:ok, _} = ExZarr.open(path: ctx.path)
    end

    test "v2 without dimension_separator uses \".\" chunk keys", ctx do
      put_meta(ctx.path, ".zarray", @v2)
      chunk = for i <- 1..16, into: <<>>, do: <<i::32-little>>
      File.write!(Path.join(ctx.path, "1.0"), chunk)
      assert {:ok, a} = ExZarr.open(path: ctx.path)
      assert {:ok, got} = ExZarr.Array.get_slice(a, start: {4, 0}, stop: {5, 4})
      assert got == binary_part(chunk, 0, 16)
    end

    test "unknown v2 keys are ignored", ctx do
      put_meta(ctx.path, ".zarray", Map.put(@v2, "my_key", 1))
      assert {:ok, _} = ExZarr.open(path: ctx.path)
    end
  end

  describe "nothing stored" do
    test "opening a missing path is an error and creates nothing", ctx do
      assert {:error, _} = ExZarr.open(path: ctx.path)
      refute File.exists?(ctx.path)
    end

    test "opening an empty directory is an error", ctx do
      File.mkdir_p!(ctx.path)
      assert {:error, _} = ExZarr.open(path: ctx.path)
      assert File.ls!(ctx.path) == []
    end
  end

  describe "malformed JSON" do
    for {label, text} <- [
          {"empty file", ""},
          {"truncated", ~s({"zarr_format": 3, "node_type": "arr)},
          {"not JSON", "zarr_format = 3"},
          {"a JSON array", "[3, 8, 8]"},
          {"JSON null", "null"},
          {"trailing comma", ~s({"zarr_format": 3,})},
          {"invalid UTF-8", <<?{, ?", 0xFF, 0xFE, ?", ?:, ?1, ?}>>},
          {"deeply nested", String.duplicate("[", 100_000)}
        ],
        file <- ["zarr.json", ".zarray"] do
      @tag text: text, meta_file: file
      test "#{label} in #{file}", ctx do
        open_fails(ctx, ctx.meta_file, ctx.text)
      end
    end
  end

  describe "duplicate JSON keys" do
    # valid documents but for one key given twice (at the top, or inside an object)
    for {file, meta, text} <- [
          {"zarr.json", @v3, ~s("shape": [8, 8], "shape": [16, 8],)},
          {"zarr.json", @v3, ~s("attributes": {"a": 1, "a": 2},)},
          {".zarray", @v2, ~s("chunks": [4, 4], "chunks": [2, 2],)}
        ] do
      @tag meta_file: file, meta: meta, text: text
      test "#{text} in #{file}", ctx do
        json = Interop.encode_json(ctx.meta)
        put_meta(ctx.path, ctx.meta_file, json)
        assert {:ok, _} = ExZarr.open(path: ctx.path)
        doubled = String.replace(json, ~r/^\{/, "{" <> ctx.text)

        assert {:error, {:invalid_json, _, {:duplicate_key, _}}} =
                 open_fails(ctx, ctx.meta_file, doubled)
      end
    end
  end

  rect = fn config ->
    %{"chunk_grid" => %{"name" => "rectilinear", "configuration" => config}}
  end

  describe "wrong v3 fields" do
    for {label, change} <- [
          {"shape a string", %{"shape" => "8,8"}},
          {"negative shape", %{"shape" => [8, -1]}},
          {"fractional shape", %{"shape" => [8.5, 8]}},
          {"zero chunk size",
           %{
             "chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => [0, 4]}}
           }},
          {"chunk rank mismatch",
           %{"chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => [4]}}}},
          {"chunk_grid without configuration", %{"chunk_grid" => %{"name" => "regular"}}},
          {"unknown data type name", %{"data_type" => "int33"}},
          {"data type a number", %{"data_type" => 5}},
          {"fill value a word", %{"fill_value" => "zero"}},
          {"fill value out of int32 range", %{"fill_value" => 4_294_967_296}},
          {"fractional int fill value", %{"fill_value" => 1.5}},
          {"zarr_format 4", %{"zarr_format" => 4}},
          {"zarr_format a string", %{"zarr_format" => "3"}},
          {"node_type group", %{"node_type" => "group"}},
          {"no codecs", %{"codecs" => []}},
          {"no array->bytes codec",
           %{"codecs" => [%{"name" => "gzip", "configuration" => %{"level" => 1}}]}},
          {"two bytes codecs",
           %{
             "codecs" => [
               %{"name" => "bytes", "configuration" => %{"endian" => "little"}},
               %{"name" => "bytes", "configuration" => %{"endian" => "big"}}
             ]
           }},
          {"bytes endian middle",
           %{"codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "middle"}}]}},
          {"bytes after gzip",
           %{
             "codecs" => [
               %{"name" => "gzip", "configuration" => %{"level" => 1}},
               %{"name" => "bytes", "configuration" => %{"endian" => "little"}}
             ]
           }},
          {"transpose order repeats an axis",
           %{
             "codecs" => [
               %{"name" => "transpose", "configuration" => %{"order" => [0, 0]}},
               %{"name" => "bytes", "configuration" => %{"endian" => "little"}}
             ]
           }},
          {"transpose order of the wrong rank",
           %{
             "codecs" => [
               %{"name" => "transpose", "configuration" => %{"order" => [0]}},
               %{"name" => "bytes", "configuration" => %{"endian" => "little"}}
             ]
           }},
          {"gzip level 12",
           %{
             "codecs" => [
               %{"name" => "bytes", "configuration" => %{"endian" => "little"}},
               %{"name" => "gzip", "configuration" => %{"level" => 12}}
             ]
           }},
          {"key separator that climbs",
           %{
             "chunk_key_encoding" => %{
               "name" => "default",
               "configuration" => %{"separator" => "/../"}
             }
           }},
          {"key separator a letter",
           %{"chunk_key_encoding" => %{"name" => "v2", "configuration" => %{"separator" => "x"}}}},
          {"dimension_names of the wrong length", %{"dimension_names" => ["x"]}},
          {"rectilinear without kind", rect.(%{"chunk_shapes" => [[4, 4], 4]})},
          {"rectilinear kind not inline", rect.(%{"kind" => "file", "chunk_shapes" => [8, 8]})},
          {"rectilinear unknown configuration key",
           rect.(%{"kind" => "inline", "chunk_shapes" => [8, 8], "x" => 1})},
          {"rectilinear without chunk_shapes", rect.(%{"kind" => "inline"})},
          {"rectilinear chunk_shapes not a list",
           rect.(%{"kind" => "inline", "chunk_shapes" => 8})},
          {"rectilinear rank mismatch", rect.(%{"kind" => "inline", "chunk_shapes" => [[4, 4]]})},
          {"rectilinear zero edge",
           rect.(%{"kind" => "inline", "chunk_shapes" => [[4, 0, 4], 4]})},
          {"rectilinear negative edge",
           rect.(%{"kind" => "inline", "chunk_shapes" => [[4, -4, 8], 4]})},
          {"rectilinear zero integer axis",
           rect.(%{"kind" => "inline", "chunk_shapes" => [8, 0]})},
          {"rectilinear fractional edge",
           rect.(%{"kind" => "inline", "chunk_shapes" => [[4.5, 4], 4]})},
          {"rectilinear empty axis", rect.(%{"kind" => "inline", "chunk_shapes" => [[], 4]})},
          {"rectilinear edges short of the shape",
           rect.(%{"kind" => "inline", "chunk_shapes" => [[4, 3], 4]})},
          {"rectilinear run of three",
           rect.(%{"kind" => "inline", "chunk_shapes" => [[[4, 2, 1]], 4]})},
          {"rectilinear run with a zero count",
           rect.(%{"kind" => "inline", "chunk_shapes" => [[[4, 0], 8], 4]})},
          {"rectilinear run with a zero value",
           rect.(%{"kind" => "inline", "chunk_shapes" => [[[0, 3], 8], 4]})},
          {"rectilinear nested run",
           rect.(%{"kind" => "inline", "chunk_shapes" => [[[[4, 2]]], 4]})},
          {"rectilinear too many chunks",
           rect.(%{"kind" => "inline", "chunk_shapes" => [[[1, 1_000_000], [1, 1]], 4]})},
          {"rectilinear astronomical run",
           rect.(%{"kind" => "inline", "chunk_shapes" => [[[1, 1_152_921_504_606_846_976]], 4]})},
          {"rectilinear edge beyond the largest extent",
           rect.(%{"kind" => "inline", "chunk_shapes" => [[18_446_744_073_709_551_616], 4]})},
          {"rectilinear shards that the inner chunks do not divide",
           Map.merge(rect.(%{"kind" => "inline", "chunk_shapes" => [[4, 3, 1], 4]}), %{
             "codecs" => [
               %{
                 "name" => "sharding_indexed",
                 "configuration" => %{
                   "chunk_shape" => [2, 2],
                   "codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}],
                   "index_codecs" => [
                     %{"name" => "bytes", "configuration" => %{"endian" => "little"}}
                   ]
                 }
               }
             ]
           })}
        ] do
      @tag change: change
      test label, ctx do
        open_fails(ctx, "zarr.json", Map.merge(@v3, ctx.change))
      end
    end

    for key <-
          ~w(zarr_format node_type shape data_type chunk_grid chunk_key_encoding fill_value codecs) do
      @tag key: key
      test "missing #{key}", ctx do
        open_fails(ctx, "zarr.json", Map.delete(@v3, ctx.key))
      end
    end
  end

  describe "wrong v2 fields" do
    for {label, change} <- [
          {"dtype without byte order", %{"dtype" => "i4"}},
          {"unknown dtype", %{"dtype" => "<i3"}},
          {"dtype a number", %{"dtype" => 4}},
          {"order X", %{"order" => "X"}},
          {"compressor a string", %{"compressor" => "gzip"}},
          {"compressor without id", %{"compressor" => %{"level" => 1}}},
          {"filters a string", %{"filters" => "delta"}},
          {"dimension_separator -", %{"dimension_separator" => "-"}},
          {"dimension_separator that climbs", %{"dimension_separator" => "/../"}},
          {"shape null", %{"shape" => nil}},
          {"zero chunk size", %{"chunks" => [0, 4]}},
          {"chunk rank mismatch", %{"chunks" => [4, 4, 4]}},
          {"fill value a word", %{"fill_value" => "zero"}},
          {"fill value out of int32 range", %{"fill_value" => -2_147_483_649}},
          {"zarr_format 3 in .zarray", %{"zarr_format" => 3}}
        ] do
      @tag change: change
      test label, ctx do
        open_fails(ctx, ".zarray", Map.merge(@v2, ctx.change))
      end
    end

    for key <- ~w(zarr_format shape chunks dtype) do
      @tag key: key
      test "missing #{key}", ctx do
        open_fails(ctx, ".zarray", Map.delete(@v2, ctx.key))
      end
    end
  end

  describe "unknown extensions and codecs" do
    test "an unknown top-level field that must be understood", ctx do
      assert {:error, {:unsupported_extension, _}} =
               open_fails(ctx, "zarr.json", Map.put(@v3, "my_ext", %{"must_understand" => true}))
    end

    test "an unknown extension object (must_understand implied)", ctx do
      ext = %{"name" => "my_ext", "configuration" => %{}}

      assert {:error, {:unsupported_extension, _}} =
               open_fails(ctx, "zarr.json", Map.put(@v3, "my_ext", ext))
    end

    test "an unknown storage transformer", ctx do
      meta = Map.put(@v3, "storage_transformers", [%{"name" => "my_transformer"}])
      assert {:error, {:unsupported_extension, _}} = open_fails(ctx, "zarr.json", meta)
    end

    test "an unknown chunk grid", ctx do
      grid = %{"name" => "hexagonal", "configuration" => %{"chunk_shapes" => [[4, 4], [4, 4]]}}

      assert {:error, {:unsupported_extension, "hexagonal"}} =
               open_fails(ctx, "zarr.json", Map.put(@v3, "chunk_grid", grid))
    end

    test "an unknown chunk key encoding", ctx do
      open_fails(ctx, "zarr.json", Map.put(@v3, "chunk_key_encoding", %{"name" => "hashed"}))
    end

    test "an unknown data type extension", ctx do
      open_fails(ctx, "zarr.json", Map.put(@v3, "data_type", %{"name" => "my_int"}))
    end

    test "an unknown v3 codec is named", ctx do
      codecs = @v3["codecs"] ++ [%{"name" => "my_codec", "configuration" => %{}}]

      assert {:error, {:unsupported_codec, "my_codec"}} =
               open_fails(ctx, "zarr.json", Map.put(@v3, "codecs", codecs))
    end

    @grid %{"name" => "regular", "configuration" => %{"chunk_shape" => [4, 4]}}
    @bytes %{"name" => "bytes", "configuration" => %{"endian" => "little"}}
    @raw %{"name" => "raw_bytes", "configuration" => %{"length_bytes" => 4}}
    @time %{
      "name" => "numpy.datetime64",
      "configuration" => %{"unit" => "s", "scale_factor" => 1}
    }
    # {field, a valid value, the value with an unknown key}
    @unknown_keys [
      {"chunk_grid", @grid, put_in(@grid, ["configuration", "chunk_sahpe"], [4, 4])},
      {"chunk_grid", @grid, Map.put(@grid, "extra", 1)},
      {"chunk_key_encoding", %{"name" => "default"},
       %{"name" => "default", "configuration" => %{"separatr" => "."}}},
      {"chunk_key_encoding", %{"name" => "v2"}, %{"name" => "v2", "separator" => "/"}},
      {"codecs", [@bytes], [Map.put(@bytes, "endian", "big")]},
      {"data_type", "int32", %{"name" => "int32", "extra" => 1}},
      {"data_type", "int32", %{"name" => "int32", "configuration" => %{"endian" => "big"}}},
      {"data_type", @raw, put_in(@raw, ["configuration", "align"], 8)},
      {"data_type", @time, put_in(@time, ["configuration", "tz"], "UTC")}
    ]

    for {{field, good, bad}, i} <- Enum.with_index(@unknown_keys) do
      test "an unknown key inside #{field} (#{i})", ctx do
        fill = if unquote(Macro.escape(good)) == @raw, do: "AAAAAA==", else: 0
        meta = Map.put(@v3, "fill_value", fill)

        put_meta(
          ctx.path,
          "zarr.json",
          Map.put(meta, unquote(field), unquote(Macro.escape(good)))
        )

        assert {:ok, _} = ExZarr.open(path: ctx.path)
        open_fails(ctx, "zarr.json", Map.put(meta, unquote(field), unquote(Macro.escape(bad))))
      end
    end

    test "an unknown v2 compressor is named", ctx do
      meta = Map.put(@v2, "compressor", %{"id" => "my_compressor"})
      assert {:error, {:unsupported_codec, "my_compressor"}} = open_fails(ctx, ".zarray", meta)
    end

    test "an unknown v2 filter is named", ctx do
      meta = Map.put(@v2, "filters", [%{"id" => "my_filter"}])
      assert {:error, {:unsupported_codec, "my_filter"}} = open_fails(ctx, ".zarray", meta)
    end
  end
end
