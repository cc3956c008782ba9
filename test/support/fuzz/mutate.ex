defmodule ExZarr.Fuzz.Mutate do
  @moduledoc """
  Applies the mutations of a fuzz case to the documents and chunks of a store (in the child
  BEAM). A mutation picks its target with integers that are taken modulo what is there, so
  a mutation generated without knowing the store always lands somewhere:

    * `{:doc, file, at, action}`: the `at`-th node (depth first) of the JSON document of the
      `file`-th metadata key; `action` is `{:set, value}`, `:delete`, `{:put_key, key, value}`,
      `:wrap` (into a list), `{:nest, depth}` or `{:text, fun}` on the raw bytes
      (`:truncate`, `{:append, bytes}`)
    * `{:chunk, nth, action}`: the `nth` stored chunk; `action` is `{:flip, at, xor}`,
      `{:truncate, keep_per_mille}`, `{:append, desc}`, `{:overwrite_head, desc}`,
      `{:replace, desc}` (see `ExZarr.Fuzz.Bytes`), `:delete`, or `{:shard_index, entries}`:
      rewrite the index of a shard with `(offset, nbytes)` pairs (cycled over the inner chunks,
      with a valid crc32c), keeping the shard's body
  """
  import Bitwise

  alias ExZarr.Fuzz.{Bytes, Json}
  alias ExZarr.Storage

  @meta_names ~w(zarr.json .zarray .zattrs .zgroup .zmetadata)

  @doc "Applies the mutations in order; `array` (or nil) describes sharding for shard indexes."
  @spec apply_all(Storage.t(), [term()], term()) :: :ok
  def apply_all(store, mutations, array) do
    Enum.each(mutations, &apply_one(store, &1, array))
  end

  defp apply_one(store, {:doc, file, at, action}, _array) do
    with [_ | _] = keys <- meta_keys(store),
         key = Enum.at(keys, rem(abs(file), length(keys))),
         {:ok, text} <- Storage.get(store, key) do
      Storage.put(store, key, mutate_text(text, at, action))
    end
  end

  defp apply_one(store, {:chunk, nth, action}, array) do
    with [_ | _] = keys <- chunk_keys(store),
         key = Enum.at(keys, rem(abs(nth), length(keys))),
         {:ok, bin} <- Storage.get(store, key) do
      case mutate_chunk(bin, action, array) do
        :delete -> Storage.delete(store, key)
        new -> Storage.put(store, key, new)
      end
    end
  end

  defp meta_keys(store), do: store |> keys() |> Enum.filter(&(Path.basename(&1) in @meta_names))
  defp chunk_keys(store), do: store |> keys() |> Enum.reject(&(Path.basename(&1) in @meta_names))

  defp keys(store) do
    case Storage.list(store, "") do
      {:ok, keys} -> Enum.sort(keys)
      _ -> []
    end
  end

  defp mutate_text(text, _at, :truncate), do: binary_part(text, 0, div(byte_size(text), 2))
  defp mutate_text(text, _at, {:append, extra}), do: text <> Bytes.build(extra)

  defp mutate_text(text, at, action) do
    case :jiffy.decode(text, [:return_maps]) do
      doc when is_map(doc) -> Json.encode(mutate_doc(doc, at, action))
      _ -> text
    end
  catch
    _, _ -> text
  end

  @doc "The document with the `at`-th node (depth first, modulo the node count) changed."
  @spec mutate_doc(term(), integer(), term()) :: term()
  def mutate_doc(doc, at, action) do
    paths = paths(doc, [])
    path = Enum.at(paths, rem(abs(at), length(paths)))
    update(doc, Enum.reverse(path), action)
  end

  # Every node's path (reversed), the root first.
  defp paths(term, path) do
    children =
      case term do
        %{} = map ->
          Enum.flat_map(Enum.sort(map), fn {k, v} -> paths(v, [k | path]) end)

        list when is_list(list) ->
          list |> Enum.with_index() |> Enum.flat_map(&child_paths(&1, path))

        _ ->
          []
      end

    [path | children]
  end

  defp child_paths({v, i}, path), do: paths(v, [i | path])

  defp update(_term, [], {:set, value}), do: value
  defp update(term, [], :wrap), do: [term]
  defp update(term, [], {:nest, depth}), do: {:nest, depth, term}
  defp update(%{} = map, [], {:put_key, key, value}), do: Map.put(map, key, value)
  defp update(term, [], _action), do: term

  defp update(%{} = map, [key], :delete), do: Map.delete(map, key)
  defp update(list, [i], :delete) when is_list(list), do: List.delete_at(list, i)

  defp update(%{} = map, [key | rest], action),
    do: Map.update!(map, key, &update(&1, rest, action))

  defp update(list, [i | rest], action) when is_list(list),
    do: List.update_at(list, i, &update(&1, rest, action))

  defp mutate_chunk(bin, {:flip, at, xor}, _array) when byte_size(bin) > 0 do
    at = rem(abs(at), byte_size(bin))
    <<pre::binary-size(at), b, rest::binary>> = bin
    <<pre::binary, bxor(b, max(xor &&& 255, 1)), rest::binary>>
  end

  defp mutate_chunk(bin, {:truncate, per_mille}, _array),
    do: binary_part(bin, 0, div(byte_size(bin) * rem(abs(per_mille), 1000), 1000))

  defp mutate_chunk(bin, {:append, desc}, _array), do: bin <> Bytes.build(desc)

  defp mutate_chunk(bin, {:overwrite_head, desc}, _array) do
    head = Bytes.build(desc)
    n = min(byte_size(head), byte_size(bin))
    <<binary_part(head, 0, n)::binary, binary_part(bin, n, byte_size(bin) - n)::binary>>
  end

  defp mutate_chunk(_bin, {:replace, desc}, _array), do: Bytes.build(desc)
  defp mutate_chunk(_bin, :delete, _array), do: :delete
  defp mutate_chunk(bin, {:shard_index, entries}, array), do: shard_index(bin, entries, array)
  defp mutate_chunk(bin, _action, _array), do: bin

  # Rewrites the index of a shard stored with the default index codecs (bytes + crc32c).
  defp shard_index(bin, [_ | _] = entries, %ExZarr.Array{
         pipeline: %{partial: {ExZarr.Codecs.ShardingIndexed, codec}}
       }) do
    size = codec.count * 16

    if codec.index_size == size + 4 and byte_size(bin) >= size + 4 do
      index =
        entries
        |> Stream.cycle()
        |> Enum.take(codec.count)
        |> Enum.map(fn {off, n} ->
          <<off &&& (1 <<< 64) - 1::64-little, n &&& (1 <<< 64) - 1::64-little>>
        end)
        |> IO.iodata_to_binary()

      index = index <> <<ExZarr.Native.crc32c(index)::32-little>>

      case codec.location do
        :start -> index <> binary_part(bin, size + 4, byte_size(bin) - size - 4)
        _ -> binary_part(bin, 0, byte_size(bin) - size - 4) <> index
      end
    else
      bin
    end
  end

  defp shard_index(bin, _entries, _array), do: bin
end
