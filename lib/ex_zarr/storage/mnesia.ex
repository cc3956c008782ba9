defmodule ExZarr.Storage.Mnesia do
  @moduledoc """
  A store in a Mnesia table (`storage: :mnesia, table_name: :my_array_chunks`): one record
  `{table, key, value}` per key.

  Options:
    * `:table_name` (required; `:table` is accepted too) - the table name (an atom). It is
      created on this node when missing, and an existing table must have the attributes
      `[:key, :value]`.
    * `:copies` - the storage type of a new table: `:ram_copies` (default: memory resident,
      works on any node as it is), `:disc_copies` (values live in RAM and are logged to disc)
      or `:disc_only_copies` (values live only on disc, in DETS). Given for an existing
      table, it must be the table's.

  Mnesia is started when it is not running. Disc tables need a disc schema: on a node whose
  schema is in RAM (a fresh node), the schema is moved to disc first, in Mnesia's directory
  (the `:mnesia` `:dir` application setting, by default `Mnesia.<node>` in the current
  directory); when that fails the error is `{:mnesia_needs_disc_schema, table, reason}`.

  Reads are dirty reads (no transaction, served from the table in the caller's process);
  writes and deletes run in transactions, so they are replicated to every node that holds a
  copy of the table. A value's generation is its SHA-256 (records have no room for another
  field): two versions with the same bytes share it, which is harmless for what generations
  are for (a read-modify-write of those bytes computes the same result). A conditional put
  (`put_if/4`) compares it in the transaction that writes, under the record's write lock, so
  it holds across every node of the table; a conditional delete (`delete_if/3`) likewise. A value that is part of a larger binary is copied before it is stored,
  so that the table does not keep the larger one alive.

  Size limits: a `:disc_only_copies` table is a DETS file, at most 2 GiB in all, and every
  read fetches the whole value from disc. `:disc_copies` and `:ram_copies` tables keep every
  value in memory (the whole array must fit in RAM), and a `:disc_copies` table is loaded
  whole at startup. Mnesia suits metadata and small arrays shared across a cluster; large
  arrays belong on the filesystem or in an object store.

      {:ok, store} = ExZarr.Storage.new(:mnesia, table_name: :zarr)
      :ok = ExZarr.Storage.put(store, "zarr.json", "{}")
  """
  @behaviour ExZarr.Storage

  alias ExZarr.Storage.{Keys, Range}

  @copies [:disc_copies, :disc_only_copies, :ram_copies]
  @wait_ms 30_000

  @enforce_keys [:table, :copies]
  defstruct [:table, :copies]

  @type copies :: :disc_copies | :disc_only_copies | :ram_copies
  @type t :: %__MODULE__{table: atom(), copies: copies() | :unknown}

  @impl true
  def options, do: [:table_name, :table, :copies]

  @impl true
  def init(opts) do
    with {:ok, table} <- table(Keyword.get(opts, :table_name), Keyword.get(opts, :table)),
         {:ok, copies} <- copies(Keyword.get(opts, :copies)),
         :ok <- start(),
         {:ok, copies} <- ensure_table(table, copies) do
      {:ok, %__MODULE__{table: table, copies: copies}}
    end
  end

  defp table(nil, nil), do: {:error, {:missing_option, :table_name}}
  defp table(name, nil), do: table_name(:table_name, name)
  defp table(nil, name), do: table_name(:table, name)
  defp table(name, name), do: table_name(:table_name, name)
  defp table(_name, _other), do: {:error, {:conflicting_options, :table_name, :table}}

  defp table_name(_option, name) when is_atom(name) and name not in [true, false, :schema],
    do: {:ok, name}

  defp table_name(option, name), do: {:error, {:invalid_option, option, name}}

  # nil: not given (the default for a new table, anything for an existing one).
  defp copies(copies) when is_nil(copies) or copies in @copies, do: {:ok, copies}
  defp copies(other), do: {:error, {:invalid_option, :copies, other}}

  defp start do
    case Application.ensure_all_started(:mnesia) do
      {:ok, _} -> :ok
      {:error, reason} -> {:error, {:mnesia_not_started, reason}}
    end
  end

  defp ensure_table(table, requested) do
    copies = requested || :ram_copies
    definition = [{copies, [node()]}, attributes: [:key, :value], type: :set]

    with :ok <- ensure_disc_schema(table, copies) do
      case :mnesia.create_table(table, definition) do
        {:atomic, :ok} -> wait(table, copies)
        {:aborted, {:already_exists, ^table}} -> existing_table(table, requested)
        {:aborted, reason} -> {:error, {:mnesia, reason}}
      end
    end
  end

  defp ensure_disc_schema(_table, :ram_copies), do: :ok

  defp ensure_disc_schema(table, _copies) do
    if :mnesia.table_info(:schema, :storage_type) == :disc_copies do
      :ok
    else
      case :mnesia.change_table_copy_type(:schema, node(), :disc_copies) do
        {:atomic, :ok} -> :ok
        {:aborted, reason} -> {:error, {:mnesia_needs_disc_schema, table, reason}}
      end
    end
  end

  defp existing_table(table, requested) do
    with [:key, :value] <- :mnesia.table_info(table, :attributes),
         copies when requested in [nil, copies] <- :mnesia.table_info(table, :storage_type) do
      wait(table, copies)
    else
      [_ | _] = attributes -> {:error, {:incompatible_table, table, attributes}}
      copies -> {:error, {:incompatible_table, table, {:copies, copies}}}
    end
  end

  defp wait(table, copies) do
    case :mnesia.wait_for_tables([table], @wait_ms) do
      :ok -> {:ok, copies}
      {:timeout, _} -> {:error, {:mnesia_table_not_loaded, table}}
      {:error, reason} -> {:error, {:mnesia, reason}}
    end
  end

  @impl true
  def get(%__MODULE__{table: table}, key, range) do
    case :mnesia.dirty_read(table, key) do
      [{^table, ^key, value}] -> {:ok, Range.slice(value, range)}
      [] -> {:error, :not_found}
    end
  catch
    :exit, {:aborted, reason} -> {:error, {:mnesia, reason}}
  end

  @doc "Several ranges of one value, sliced from a single lookup."
  @impl true
  def get_ranges(state, key, ranges), do: get(state, key, ranges)

  @doc "Several ranges of one value and its SHA-256 as generation, from a single lookup."
  @impl true
  def get_ranges_with_generation(%__MODULE__{} = state, key, ranges, _expected) do
    case :mnesia.dirty_read(state.table, key) do
      [{_, ^key, value}] -> {:ok, Range.slice(value, ranges), generation(value)}
      [] -> {:error, :not_found}
    end
  catch
    :exit, {:aborted, reason} -> {:error, {:mnesia, reason}}
  end

  defp generation(value), do: :crypto.hash(:sha256, value)

  @doc "A write in a transaction that first compares the stored value's generation."
  @impl true
  def put_if(%__MODULE__{table: table}, key, value, condition) do
    with {:ok, binary} <- Keys.to_owned_binary(value) do
      compare_and_write = fn ->
        stored =
          case :mnesia.read(table, key, :write) do
            [{_, ^key, old}] -> generation(old)
            [] -> :absent
          end

        if condition in [:any, stored] do
          :mnesia.write({table, key, binary})
          {:ok, generation(binary)}
        else
          {:error, :generation_mismatch}
        end
      end

      transaction(compare_and_write)
    end
  end

  @doc "A delete in a transaction that first compares the stored value's generation."
  @impl true
  def delete_if(%__MODULE__{table: table}, key, generation) do
    compare_and_delete = fn ->
      case :mnesia.read(table, key, :write) do
        [{_, ^key, old}] ->
          if generation(old) == generation,
            do: :mnesia.delete({table, key}),
            else: {:error, :generation_mismatch}

        [] ->
          {:error, :generation_mismatch}
      end
    end

    transaction(compare_and_delete)
  end

  @impl true
  def put(%__MODULE__{table: table}, key, value) do
    with {:ok, binary} <- Keys.to_owned_binary(value),
         do: transaction(fn -> :mnesia.write({table, key, binary}) end)
  end

  @impl true
  def delete(%__MODULE__{table: table}, key),
    do: transaction(fn -> :mnesia.delete({table, key}) end)

  defp transaction(fun) do
    case :mnesia.transaction(fun) do
      {:atomic, result} -> result
      {:aborted, reason} -> {:error, {:mnesia, reason}}
    end
  end

  @impl true
  def list(%__MODULE__{table: table}, prefix) do
    {:ok, Keys.under(:mnesia.dirty_all_keys(table), prefix)}
  catch
    :exit, {:aborted, reason} -> {:error, {:mnesia, reason}}
  end

  @doc "True unless the table is `:disc_only_copies` (whose reads fetch whole values from disc)."
  @impl true
  def describe(%__MODULE__{table: table}), do: "mnesia:#{table}"

  @impl true
  def supports_ranges?(%__MODULE__{copies: copies}), do: copies != :disc_only_copies
end
