defmodule ExZarr.Fuzz.Cases do
  @moduledoc """
  The generator of fuzz cases (see `ExZarr.Fuzz.Exec` for their shape), four kinds mixed:

    * `:mutated`: a valid array is created and written, then its metadata documents and
      chunks are mutated (`ExZarr.Fuzz.Mutate`), then it is opened, read, written, resized
    * `:generated`: a store made of generated documents (`ExZarr.Fuzz.Docs`) and hostile
      chunk bytes (`ExZarr.Fuzz.Bytes`), then the same calls
    * `:api`: `ExZarr.create/1` with hostile options, then hostile calls (`ExZarr.Fuzz.Api`)
    * `:group`: a hierarchy of generated group and array documents, v2 (with `.zmetadata`)
      or v3 (with inline consolidated metadata), then the group calls
  """
  import Bitwise
  import ExZarr.Fuzz.Gen

  alias ExZarr.Fuzz.{Api, Docs, Hostile}

  @doc "A fuzz case of any kind."
  @spec fuzz_case() :: ExZarr.Fuzz.Gen.t()
  def fuzz_case do
    frequency([{4, mutated()}, {3, generated()}, {3, api()}, {1, group()}])
  end

  @doc "A valid array, mutated after it is written."
  @spec mutated() :: ExZarr.Fuzz.Gen.t()
  def mutated do
    map({Api.valid_create(), list(mutation(), 1, 3), Api.ops(:array, 2)}, fn {opts, mutations,
                                                                              ops} ->
      %{kind: :mutated, setup: {:create, opts}, seed_write: true, mutations: mutations, ops: ops}
    end)
  end

  @doc "A store of generated array documents, with hostile bytes at the first chunk's key."
  @spec generated() :: ExZarr.Fuzz.Gen.t()
  def generated do
    v2 =
      map({Docs.zarray(), list(Hostile.value(), 0, 1), list(bytes_desc(), 0, 1)}, fn {doc, attrs,
                                                                                      chunk} ->
        [{".zarray", {:json, doc}} | Enum.map(attrs, &{".zattrs", {:json, &1}})] ++
          Enum.map(chunk, &{first_chunk_key(doc, 2), &1})
      end)

    v3 =
      map({Docs.v3_array(), list(bytes_desc(), 0, 1)}, fn {doc, chunk} ->
        [{"zarr.json", {:json, doc}} | Enum.map(chunk, &{first_chunk_key(doc, 3), &1})]
      end)

    map({oneof([v2, v3]), Api.ops(:array, 2)}, fn {entries, ops} ->
      %{kind: :generated, setup: {:store, entries}, ops: ops}
    end)
  end

  # The key of chunk (0, ..., 0) of a document whose shape is a list (else of a 1-d array).
  defp first_chunk_key(doc, format) do
    ndim = if is_list(doc["shape"]), do: length(doc["shape"]), else: 1
    sep = if is_binary(doc["dimension_separator"]), do: doc["dimension_separator"], else: "."
    zeros = List.duplicate("0", ndim)

    case format do
      2 -> if ndim == 0, do: "0", else: Enum.join(zeros, sep)
      3 -> Enum.join(["c" | zeros], "/")
    end
  end

  @doc "`ExZarr.create/1` with hostile options, then hostile calls."
  @spec api() :: ExZarr.Fuzz.Gen.t()
  def api do
    map({Api.hostile_create(), Api.ops(:array, 4)}, fn {opts, ops} ->
      %{kind: :api, setup: {:create, opts}, seed_write: true, ops: ops}
    end)
  end

  @doc "A hierarchy of generated documents under a group."
  @spec group() :: ExZarr.Fuzz.Gen.t()
  def group do
    v3 =
      map({Docs.v3_group(), list({Docs.member_path(), Docs.v3_array()}, 0, 2)}, fn {root, members} ->
        [
          {"zarr.json", {:json, root}}
          | Enum.map(members, fn {p, doc} -> {p <> "/zarr.json", {:json, doc}} end)
        ]
      end)

    v2 =
      map({Docs.zmetadata(), list({Docs.member_path(), Docs.zarray()}, 0, 2)}, fn {zmeta, members} ->
        [{".zgroup", {:json, %{"zarr_format" => 2}}}, {".zmetadata", {:json, zmeta}}] ++
          Enum.map(members, fn {p, doc} -> {p <> "/.zarray", {:json, doc}} end)
      end)

    map({oneof([v3, v2]), Api.ops(:group, 3)}, fn {entries, ops} ->
      %{kind: :group, setup: {:store, entries}, ops: ops}
    end)
  end

  @doc "A mutation of a stored metadata document or chunk (see `ExZarr.Fuzz.Mutate`)."
  @spec mutation() :: ExZarr.Fuzz.Gen.t()
  def mutation do
    frequency([
      {3, {:doc, int(0, 4), int(0, 200), doc_action()}},
      {3, {:chunk, int(0, 20), chunk_action()}}
    ])
  end

  defp doc_action do
    frequency([
      {6, {:set, Hostile.value()}},
      {2, :delete},
      {2, {:put_key, Hostile.key(), Hostile.value()}},
      {1, :wrap},
      {1, {:nest, int(1, 200_000)}},
      {1, :truncate},
      {1, {:append, elements([{:text, "}"}, {:text, ",\"x\":1}"}, {:text, <<0>>}])}}
    ])
  end

  defp chunk_action do
    frequency([
      {3, {:flip, int(0, 4096), int(1, 255)}},
      {2, {:truncate, int(0, 999)}},
      {1, {:append, bytes_desc()}},
      {2, {:overwrite_head, bytes_desc()}},
      {3, {:replace, bytes_desc()}},
      {1, :delete},
      {3, {:shard_index, list({u64(), u64()}, 1, 4)}}
    ])
  end

  defp u64,
    do:
      frequency([
        {3, int(0, 64)},
        {2, Hostile.size()},
        {1, elements([(1 <<< 64) - 1, (1 <<< 64) - 2])}
      ])

  @doc "Hostile stored bytes (see `ExZarr.Fuzz.Bytes`)."
  @spec bytes_desc() :: ExZarr.Fuzz.Gen.t()
  def bytes_desc do
    big = elements([1 <<< 20, 1 <<< 27, 1 <<< 28, 1 <<< 31, 1 <<< 32])

    frequency([
      {3, {:random, int(0, 300), int(0, 1000)}},
      {1, {:zeros, int(0, 64)}},
      {2, {:zstd_rle, big}},
      {2, {:zstd_claims, Hostile.size(), int(0, 4096)}},
      {1, {:gzip_zeros, big}},
      {1, {:zlib_zeros, big}},
      {1, {:lz4_claims, Hostile.size(), {:random, int(0, 64), int(0, 9)}}},
      {2,
       {:blosc_header, elements([2, 1, 0, 255]), int(0, 255), elements([0, 1, 4, 8, 255]),
        Hostile.size(), Hostile.size(), Hostile.size(), {:random, int(0, 64), int(0, 9)}}},
      {2, {:vlen, Hostile.size(), list(Hostile.size(), 0, 4)}},
      {1, {:zstd_of, {:vlen, elements([1 <<< 20, 1 <<< 24]), [0]}}},
      {1, {:zstd_of, {:zeros, elements([1 <<< 20, 1 <<< 26])}}}
    ])
  end
end
