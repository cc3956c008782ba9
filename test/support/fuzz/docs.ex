defmodule ExZarr.Fuzz.Docs do
  @moduledoc """
  Generators of metadata documents (as `ExZarr.Fuzz.Json` terms): v2 `.zarray`, `.zattrs`,
  `.zgroup`, `.zmetadata` and v3 `zarr.json` for arrays and groups (with inline consolidated
  metadata).

  An array document is a plausible one with zero to two of its fields made hostile (so that
  most documents get past the first checks and reach what is behind them): huge item sizes
  (`|V1099511627776`), 65+ dimensions, huge or negative sizes, sharding with a huge number
  of inner chunks, codec parameters out of range (blosc `typesize` 2^31), wrong types,
  deep nesting, unknown keys.
  """
  import Bitwise
  import ExZarr.Fuzz.Gen

  alias ExZarr.Fuzz.Hostile

  @v2_dtypes ~w(|b1 |i1 |u1 <i2 >i2 <i4 >u4 <i8 <u8 <f2 >f4 <f8 <c8 >c16 |S3 |V5 <U2 >U1
                <M8[ns] >m8[10s] <M8[D])
  @v3_dtypes ~w(bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64
                complex64 complex128)
  @huge [1 <<< 31, 1 <<< 32, 1 <<< 40, (1 <<< 63) - 1, 1 <<< 63, 1 <<< 64]

  @doc "A `.zarray` document and the chunk keys of its first chunk (for hostile chunk bytes)."
  @spec zarray() :: ExZarr.Fuzz.Gen.t()
  def zarray do
    bind(plain_shape(), fn {shape, chunks} ->
      doc([
        {"zarr_format", 2, Hostile.scalar()},
        {"shape", shape, shape()},
        {"chunks", chunks, chunks()},
        {"dtype", v2_dtype(), hostile_v2_dtype()},
        {"compressor", oneof([:null, numcodecs(:plausible)]),
         oneof([numcodecs(:hostile), Hostile.wrong()])},
        {"fill_value", elements([0, :null, 0, 1]),
         oneof([Hostile.scalar(), elements(["NaN", "AAAA", 1.5])])},
        {"order", elements(["C", "F"]), Hostile.wrong()},
        {"filters", :null,
         oneof([list(numcodecs(:hostile), 1, 2), object_filter(), Hostile.wrong()])},
        {"dimension_separator", elements([".", "/"]), Hostile.wrong()}
      ])
    end)
  end

  @doc "A v3 array `zarr.json` document."
  @spec v3_array() :: ExZarr.Fuzz.Gen.t()
  def v3_array do
    bind({plain_shape(), elements(@v3_dtypes ++ ["string", "variable_length_bytes"])}, fn {{shape,
                                                                                            chunks},
                                                                                           dtype} ->
      doc([
        {"zarr_format", 3, Hostile.scalar()},
        {"node_type", "array", Hostile.scalar()},
        {"shape", shape, shape()},
        {"data_type", dtype, hostile_v3_dtype()},
        {"chunk_grid", regular(chunks), oneof([map(chunks(), &regular/1), Hostile.wrong()])},
        {"chunk_key_encoding", %{"name" => "default", "configuration" => %{"separator" => "/"}},
         key_encoding()},
        {"fill_value", fill(dtype),
         oneof([Hostile.scalar(), elements(["NaN", "0x7fc00000", "AAAA", [1.0, "NaN"], ""])])},
        {"codecs", v3_codecs(dtype, shape, chunks), hostile_codecs(shape)},
        {"attributes", %{}, Hostile.value()},
        {"dimension_names", :null, Hostile.wrong()},
        {"storage_transformers", [], Hostile.wrong()},
        # A chunk grid of few huge shards, each of a huge number of one-element inner chunks.
        {:sharding_bomb, nil, sharding_bomb(length(shape))}
      ])
    end)
  end

  # A document from `{key, plausible, hostile}` fields: up to two keys are hostile; sometimes
  # an unknown key is added or a key dropped. `:sharding_bomb` is a pseudo key that replaces
  # chunk_grid and codecs together.
  defp doc(fields) do
    keys = Enum.map(fields, &elem(&1, 0))

    bind(
      {list(elements(keys), 0, 2), list({Hostile.key(), Hostile.value()}, 0, 1),
       list(elements(keys), 0, 1)},
      fn {hostile, extra, dropped} ->
        fields
        |> Enum.map(fn {key, plausible, bad} ->
          {key, if(key in hostile, do: bad, else: plausible)}
        end)
        |> fixed_map()
        |> map(fn doc ->
          doc
          |> apply_bomb()
          |> Map.merge(Map.new(extra))
          |> Map.drop(dropped)
        end)
      end
    )
  end

  defp apply_bomb(%{sharding_bomb: nil} = doc), do: Map.delete(doc, :sharding_bomb)

  defp apply_bomb(%{sharding_bomb: changes} = doc),
    do: doc |> Map.delete(:sharding_bomb) |> Map.merge(changes)

  defp apply_bomb(doc), do: doc

  # A plausible shape and chunk shape of the same rank (0 to 3).
  defp plain_shape do
    bind(int(0, 3), fn ndim -> {vector(ndim, int(0, 12)), vector(ndim, int(1, 6))} end)
  end

  @doc "A hostile shape: huge, negative, fractional, 65+ dimensions, wrong types."
  @spec shape() :: ExZarr.Fuzz.Gen.t()
  def shape do
    oneof([
      list(Hostile.size(), 1, 3),
      map(int(65, 70), &List.duplicate(1, &1)),
      map({int(1, 3), elements(@huge)}, fn {n, v} -> List.duplicate(v, n) end),
      list(Hostile.number(), 1, 3),
      Hostile.wrong()
    ])
  end

  defp chunks do
    oneof([
      list(elements([0, 1 | @huge]), 1, 3),
      map(int(65, 70), &List.duplicate(1, &1)),
      list(Hostile.number(), 1, 3),
      Hostile.wrong()
    ])
  end

  defp v2_dtype, do: elements(@v2_dtypes)

  @doc "A hostile v2 dtype: a huge or malformed size, a hostile structured type, `|O`."
  @spec hostile_v2_dtype() :: ExZarr.Fuzz.Gen.t()
  def hostile_v2_dtype do
    huge_sizes = elements(@huge ++ [1 <<< 30, 1 <<< 29])
    struct_leaf = elements(@v2_dtypes ++ ["|V1099511627776", "<U536870912"])

    frequency([
      {4, map({elements(~w(|V |S <U >U)), huge_sizes}, fn {p, n} -> p <> to_string(n) end)},
      {1,
       map({elements(~w(|V |S <U >U |i <f |b <c)), Hostile.int()}, fn {p, n} ->
         p <> to_string(n)
       end)},
      {1, map(elements(~w(Q ms10 10 [ns] Y2 as)), &"<M8[#{&1}]")},
      {1,
       list(oneof([list({elements(["a", "b", "", "a"]), struct_leaf}), structured_field()]), 1, 3)},
      {1, elements(["|O", "<i4 ", "i4", "<i16", "|V0", "<U0", ""])},
      {1, Hostile.wrong()}
    ])
  end

  defp structured_field,
    do: map({elements(["c", "d"]), v2_dtype(), list(Hostile.size(), 1, 3)}, &Tuple.to_list/1)

  # The object codec of a "|O" array, in filters.
  defp object_filter,
    do: elements([[%{"id" => "vlen-utf8"}], [%{"id" => "vlen-bytes"}], [%{"id" => "json2"}]])

  @doc "A hostile v3 data_type: a parameterised type with a huge size, a structured type, a wrong name."
  @spec hostile_v3_dtype() :: ExZarr.Fuzz.Gen.t()
  def hostile_v3_dtype do
    sized = ~w(raw_bytes null_terminated_bytes fixed_length_utf32)
    times = ~w(numpy.datetime64 numpy.timedelta64)

    frequency([
      {4,
       map({elements(sized), oneof([elements(@huge), Hostile.int()])}, fn {n, len} ->
         %{"name" => n, "configuration" => %{"length_bytes" => len}}
       end)},
      {1,
       map({elements(times), Hostile.scalar(), Hostile.int()}, fn {n, u, s} ->
         %{"name" => n, "configuration" => %{"unit" => u, "scale_factor" => s}}
       end)},
      {1,
       map(
         list({Hostile.string(), oneof([elements(@v3_dtypes), hostile_v3_leaf()])}, 1, 3),
         fn fields ->
           %{
             "name" => "structured",
             "configuration" => %{"fields" => Enum.map(fields, &Tuple.to_list/1)}
           }
         end
       )},
      {1, elements(["int33", "r16", "", "Int32", "string ", "float128"])},
      {1, Hostile.wrong()}
    ])
  end

  defp hostile_v3_leaf,
    do: map(Hostile.int(), &%{"name" => "raw_bytes", "configuration" => %{"length_bytes" => &1}})

  defp fill(dtype) when dtype in ["string"], do: ""
  defp fill("variable_length_bytes"), do: ""
  defp fill("bool"), do: false
  defp fill(_dtype), do: 0

  defp regular(chunk_shape),
    do: %{"name" => "regular", "configuration" => %{"chunk_shape" => chunk_shape}}

  defp key_encoding do
    oneof([
      map(
        elements(["\\", "", "//", ".."]),
        &%{"name" => "default", "configuration" => %{"separator" => &1}}
      ),
      elements([
        %{"name" => "v2"},
        "default",
        %{"name" => "nope"},
        %{"name" => "v2", "configuration" => []}
      ]),
      Hostile.wrong()
    ])
  end

  # Plausible v3 codecs for a data type: an optional transpose, bytes or the vlen codec (or
  # sharding around bytes), an optional compressor and crc32c.
  defp v3_codecs(dtype, shape, chunks) do
    ndim = length(shape)

    to_bytes =
      case dtype do
        "string" ->
          %{"name" => "vlen-utf8"}

        "variable_length_bytes" ->
          %{"name" => "vlen-bytes"}

        _ ->
          oneof([
            %{"name" => "bytes", "configuration" => %{"endian" => "little"}},
            sharding(chunks)
          ])
      end

    map(
      {list(oneof([transpose(ndim), scale_offset(), cast_value()]), 0, 1), to_bytes,
       list(compressor(), 0, 1), list(checksum(), 0, 1)},
      fn {t, b, c, crc} ->
        t ++ [b | c] ++ crc
      end
    )
  end

  defp transpose(ndim),
    do:
      map(
        elements(permutations(Enum.to_list(0..(ndim - 1)//1))),
        &%{"name" => "transpose", "configuration" => %{"order" => &1}}
      )

  # Offsets and scales of every JSON form a fill value takes, some of no integer type, zero.
  defp scale_offset do
    map(
      {elements([0, 1, -3, 2.5, "NaN", "0x3f800000", 1 <<< 70]),
       elements([1, 2, -1, 0, 0.5, "Infinity", 1 <<< 63])},
      fn {offset, scale} ->
        %{"name" => "scale_offset", "configuration" => %{"offset" => offset, "scale" => scale}}
      end
    )
  end

  # Every target type, rounding and range mode, scalar maps of any shape, bad names.
  defp cast_value do
    map(
      {elements(@v3_dtypes ++ ["bfloat16", "nope", 1]),
       elements(~w(nearest-even towards-zero towards-positive towards-negative nearest-away up)),
       elements([:absent, "error", "clamp", "wrap", "saturate"]),
       elements([
         :absent,
         %{"encode" => [["NaN", 0], ["Infinity", 1]], "decode" => [[0, "NaN"]]},
         %{"encode" => [[1 <<< 70, 0]]},
         %{"both" => []},
         [["NaN", 0]]
       ])},
      fn {type, rounding, range, map} ->
        config =
          [
            {"data_type", type},
            {"rounding", rounding},
            {"out_of_range", range},
            {"scalar_map", map}
          ]
          |> Enum.reject(&(elem(&1, 1) == :absent))
          |> Map.new()

        %{"name" => "cast_value", "configuration" => config}
      end
    )
  end

  defp permutations([]), do: [[]]
  defp permutations(list), do: for(x <- list, rest <- permutations(list -- [x]), do: [x | rest])

  defp checksum do
    oneof([
      %{"name" => "crc32c"},
      map(
        {elements(~w(crc32 adler32 crc32c)), elements(["start", "end"])},
        &%{"name" => "numcodecs.#{elem(&1, 0)}", "configuration" => %{"location" => elem(&1, 1)}}
      ),
      %{"name" => "numcodecs.fletcher32", "configuration" => %{}},
      map(
        elements([0, 7, 0xFFFFFFFF]),
        &%{"name" => "numcodecs.jenkins_lookup3", "configuration" => %{"initval" => &1}}
      )
    ])
  end

  defp compressor do
    oneof([
      map(
        int(0, 5),
        &%{"name" => "zstd", "configuration" => %{"level" => &1, "checksum" => false}}
      ),
      map(int(1, 9), &%{"name" => "gzip", "configuration" => %{"level" => &1}}),
      map(
        elements(["lz4", "zstd"]),
        &%{
          "name" => "blosc",
          "configuration" => %{
            "cname" => &1,
            "clevel" => 5,
            "shuffle" => "shuffle",
            "typesize" => 4,
            "blocksize" => 0
          }
        }
      )
    ])
  end

  # A shard of the chunk shape, of inner chunks of size 1 or the whole shard along each axis.
  defp sharding(chunks) do
    map(vector(length(chunks), bool()), fn whole ->
      inner = Enum.zip_with(chunks, whole, fn c, w -> if w, do: c, else: 1 end)

      %{
        "name" => "sharding_indexed",
        "configuration" => %{
          "chunk_shape" => inner,
          "codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}],
          "index_codecs" => [
            %{"name" => "bytes", "configuration" => %{"endian" => "little"}},
            %{"name" => "crc32c"}
          ],
          "index_location" => "end"
        }
      }
    end)
  end

  defp sharding_bomb(ndim) do
    map({elements([22, 26, 30, 40, 62]), elements(["end", "start"])}, fn {log2, location} ->
      n = max(ndim, 1)
      per_dim = 1 <<< div(log2 + n - 1, n)
      shard = List.duplicate(per_dim, n)

      %{
        "shape" => shard,
        "chunk_grid" => regular(shard),
        "codecs" => [
          %{
            "name" => "sharding_indexed",
            "configuration" => %{
              "chunk_shape" => List.duplicate(1, n),
              "codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}],
              "index_codecs" => [
                %{"name" => "bytes", "configuration" => %{"endian" => "little"}},
                %{"name" => "crc32c"}
              ],
              "index_location" => location
            }
          }
        ]
      }
    end)
  end

  # Hostile codec lists: out-of-range parameters, nesting, unknown codecs, odd index codecs.
  defp hostile_codecs(shape) do
    bytes = %{"name" => "bytes", "configuration" => %{"endian" => "little"}}

    oneof([
      map(numcodecs(:hostile), fn c ->
        [bytes, %{"name" => numcodecs_v3_name(c["id"]), "configuration" => Map.delete(c, "id")}]
      end),
      map(numcodecs(:hostile), fn c ->
        [
          %{"name" => "numcodecs." <> to_string(c["id"]), "configuration" => Map.delete(c, "id")},
          bytes
        ]
      end),
      # Alone (pcodec and zfpy are array->bytes codecs), or after them a checksum.
      map({numcodecs(:hostile), list(numcodecs(:hostile), 0, 1)}, fn {c, after_it} ->
        Enum.map([c | after_it], fn c ->
          %{"name" => numcodecs_v3_name(c["id"]), "configuration" => Map.delete(c, "id")}
        end)
      end),
      map(
        {list(Hostile.size(), 1, 3),
         elements([[bytes], [], [bytes, bytes], [%{"name" => "sharding_indexed"}]]),
         elements(["end", "start", "middle"])},
        fn {inner, codecs, loc} ->
          [
            %{
              "name" => "sharding_indexed",
              "configuration" => %{
                "chunk_shape" => inner,
                "codecs" => codecs,
                "index_codecs" => [bytes, %{"name" => "crc32c"}],
                "index_location" => loc
              }
            }
          ]
        end
      ),
      map(
        elements([[bytes], [bytes, %{"name" => "gzip"}], [], [%{"name" => "crc32c"}]]),
        fn index ->
          [
            %{
              "name" => "sharding_indexed",
              "configuration" => %{
                "chunk_shape" => List.duplicate(1, max(list_length(shape), 1)),
                "codecs" => [bytes],
                "index_codecs" => index
              }
            }
          ]
        end
      ),
      map(
        Hostile.wrong(),
        &[%{"name" => "transpose", "configuration" => %{"order" => &1}}, bytes]
      ),
      map(
        elements(["big", "middle", :null, 1]),
        &[%{"name" => "bytes", "configuration" => %{"endian" => &1}}]
      ),
      elements([
        [],
        [bytes, bytes],
        [%{"name" => "vlen-utf8"}],
        [%{"name" => "nope", "configuration" => %{}}],
        [%{"name" => "zstd"}]
      ]),
      Hostile.wrong()
    ])
  end

  defp numcodecs_v3_name(id) when id in ["blosc", "zstd", "gzip", "crc32c"], do: id
  defp numcodecs_v3_name(id), do: "numcodecs.#{id}"

  defp list_length(list) when is_list(list), do: length(list)
  defp list_length(_), do: 1

  @doc """
  A numcodecs compressor or filter config: `:plausible` parameters, or `:hostile` ones (out of
  range or of the wrong type: blosc `typesize` 2^31, lz4 `acceleration` 2^32, ...).
  """
  @spec numcodecs(:plausible | :hostile) :: ExZarr.Fuzz.Gen.t()
  def numcodecs(kind) do
    params = params()

    bind(elements(Map.keys(params)), fn id ->
      case params[id] do
        [] ->
          %{"id" => id}

        keys ->
          values =
            Enum.map(keys, fn {key, good, bad} ->
              {key, if(kind == :plausible, do: good, else: oneof([good, bad]))}
            end)

          map(list(oneof(values), 0, 4), &Map.new([{"id", id} | &1]))
      end
    end)
  end

  # Each codec's parameters: {key, plausible values, hostile values}.
  defp params do
    big = oneof([elements(@huge ++ [3 <<< 30, -1, 0]), Hostile.number()])
    dtype = oneof([v2_dtype(), hostile_v2_dtype()])

    %{
      "blosc" => [
        {"cname", elements(~w(lz4 zstd blosclz lz4hc zlib)), elements(["snappy", "nope", "", 1])},
        {"clevel", int(0, 9), big},
        {"shuffle", int(0, 2), big},
        {"typesize", elements([1, 2, 4, 8]), big},
        {"blocksize", elements([0, 256]), big}
      ],
      "zstd" => [{"level", int(0, 5), big}, {"checksum", bool(), Hostile.scalar()}],
      "gzip" => [{"level", int(1, 9), big}],
      "zlib" => [{"level", int(1, 9), big}],
      "bz2" => [{"level", int(1, 9), big}],
      "lz4" => [{"acceleration", int(1, 5), big}],
      "lzma" => [
        {"format", int(0, 1), big},
        {"check", int(-1, 0), big},
        {"preset", int(0, 3), big},
        {"filters", :null,
         list(
           map(list({elements(~w(id dict_size lc lp pb)), Hostile.int()}, 0, 3), &Map.new/1),
           0,
           3
         )}
      ],
      "delta" => [{"dtype", v2_dtype(), dtype}, {"astype", v2_dtype(), dtype}],
      "fixedscaleoffset" => [
        {"dtype", v2_dtype(), dtype},
        {"astype", v2_dtype(), dtype},
        {"scale", int(1, 10), Hostile.number()},
        {"offset", int(0, 10), Hostile.number()}
      ],
      "quantize" => [{"digits", int(1, 5), big}, {"dtype", v2_dtype(), dtype}],
      "bitround" => [{"keepbits", int(1, 10), big}],
      "shuffle" => [{"elementsize", elements([1, 2, 4]), big}],
      "astype" => [{"encode_dtype", v2_dtype(), dtype}, {"decode_dtype", v2_dtype(), dtype}],
      "packbits" => [],
      "base64" => [],
      "categorize" => [
        {"labels", elements([["a", "bb"], [], ["x", "x", "abc"]]),
         oneof([list(Hostile.string(), 0, 3), Hostile.wrong()])},
        {"dtype", elements(["<U2", ">U1"]), dtype},
        {"astype", elements(["|u1", "<u2", "<f2", "<i8"]), dtype}
      ],
      "nope" => [{"x", 1, Hostile.scalar()}]
    }
    |> Map.merge(checksum_params(big))
    |> Map.merge(numeric_params(big))
  end

  # The checksum codecs: where the checksum goes, jenkins_lookup3's seed and prefix; fletcher32
  # takes no key at all.
  defp checksum_params(big) do
    location = {"location", elements(["start", "end"]), Hostile.scalar()}

    %{
      "crc32c" => [location],
      "crc32" => [location],
      "adler32" => [location],
      "fletcher32" => [{"location", :null, Hostile.scalar()}],
      "jenkins_lookup3" => [
        {"initval", elements([0, 1, 0xFFFFFFFF]), oneof([elements([1 <<< 32, -1, 1.0]), big])},
        {"prefix", :null, Hostile.wrong()}
      ]
    }
  end

  # The array->bytes codecs of numbers: pcodec's and zfpy's settings at and beyond their range.
  defp numeric_params(big) do
    %{
      "pcodec" => [
        {"level", int(0, 12), oneof([elements([13, -1]), big])},
        {"mode_spec", elements(["auto", "classic"]), Hostile.scalar()},
        {"delta_spec", elements(~w(auto none try_consecutive try_lookback)), Hostile.scalar()},
        {"paging_spec", "equal_pages_up_to", Hostile.scalar()},
        {"delta_encoding_order", :null, oneof([int(-1, 8), big])},
        {"equal_pages_up_to", elements([1, 262_144, 16_777_216]),
         oneof([elements([0, 16_777_217]), big])}
      ],
      "zfpy" => [
        {"mode", elements([2, 3, 4]), oneof([int(-1, 6), big])},
        {"tolerance", elements([-1, 0.5, 0.0]),
         oneof([elements([-0.5, 1.0e308, -1.0e308, 5.0e-324]), big])},
        {"rate", elements([-1, 8, 16, 64]),
         oneof([elements([0, 0.1, 1, 64.5, 65, -0.5, -2, 1.0e308]), big])},
        {"precision", elements([-1, 16, 64]), oneof([int(-3, 66), big])},
        {"compression_kwargs", %{}, oneof([bound_kwargs(), Hostile.wrong()])}
      ]
    }
  end

  defp bound_kwargs,
    do:
      map(
        {elements(["tolerance", "rate", "precision", "x"]), Hostile.number()},
        fn {k, v} -> %{k => v} end
      )

  @doc "A v3 group `zarr.json`, possibly with inline consolidated metadata of hostile arrays."
  @spec v3_group() :: ExZarr.Fuzz.Gen.t()
  def v3_group do
    fixed_map([
      {"zarr_format", frequency([{9, 3}, {1, Hostile.scalar()}])},
      {"node_type", frequency([{9, "group"}, {1, Hostile.scalar()}])},
      {"attributes", frequency([{4, %{}}, {1, Hostile.value()}])},
      {"consolidated_metadata",
       frequency([
         {2, :null},
         {3,
          map(list({member_path(), oneof([v3_array(), v3_group_leaf()])}, 0, 3), fn members ->
            %{"kind" => "inline", "must_understand" => false, "metadata" => Map.new(members)}
          end)},
         {1, Hostile.wrong()}
       ])}
    ])
  end

  defp v3_group_leaf, do: %{"zarr_format" => 3, "node_type" => "group", "attributes" => %{}}

  @doc "A v2 `.zmetadata` document of hostile member documents."
  @spec zmetadata() :: ExZarr.Fuzz.Gen.t()
  def zmetadata do
    member =
      oneof([
        map({member_path(), zarray()}, fn {p, doc} -> {p <> "/.zarray", doc} end),
        map(member_path(), &{&1 <> "/.zgroup", %{"zarr_format" => 2}}),
        map({member_path(), Hostile.value()}, fn {p, doc} -> {p <> "/.zattrs", doc} end)
      ])

    map({list(member, 0, 3), frequency([{5, 1}, {1, Hostile.scalar()}])}, fn {members, version} ->
      %{
        "zarr_consolidated_format" => version,
        "metadata" => Map.new([{".zgroup", %{"zarr_format" => 2}} | members])
      }
    end)
  end

  @doc "A path of a member node: plain, nested, or trying to leave the store."
  @spec member_path() :: ExZarr.Fuzz.Gen.t()
  def member_path,
    do:
      frequency([
        {6, elements(["a", "b", "a/b", "g/x"])},
        {1, elements(["..", "../x", "/abs", "a//b", "", ".", "c/0"])}
      ])
end
