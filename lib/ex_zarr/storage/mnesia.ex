defmodule ExZarr.Storage.Mnesia do
  @moduledoc """
  A store in a Mnesia table (`storage: :mnesia`): one record `{table, key, value}` per key.

  Options:
    * `:table` (required) - the table name (an atom). It is created on this node when missing,
      and an existing table must have the attributes `[:key, :value]`.
    * `:copies` - the storage type of a new table: `:disc_copies` (default; values live in RAM
      and are logged to disc), `:disc_only_copies` (values live only on disc, in DETS) or
      `:ram_copies`.

  Mnesia is started when it is not running. Disc tables need a disc schema, created once
  before Mnesia starts (`:mnesia.create_schema([node()])`, with the `:mnesia` `:dir`
  application setting pointing where the files go); without one, creating a disc table fails
  with an error saying so.

  Reads are dirty reads (no transaction, served from the table in the caller's process);
  writes and deletes run in transactions, so they are replicated to every node that holds a
  copy of the table.

  Size limits: a `:disc_only_copies` table is a DETS file, at most 2 GiB in all, and every
  read fetches the whole value from disc. `:disc_copies` and `:ram_copies` tables keep every
  value in memory (the whole array must fit in RAM), and a `:disc_copies` table is loaded
  whole at startup. Mnesia suits metadata and small arrays shared across a cluster; large
  arrays belong on the filesystem or in an object store.

      {:ok, store} = ExZarr.Storage.new(ExZarr.Storage.Mnesia, table: :zarr, copies: :ram_copies)
      :ok = ExZarr.Storage.put(store, "zarr.json", "{}")
  """
  @behaviour ExZarr.Storage

  alias ExZarr.Storage.{Keys, Range}

  @copies [:disc_copies, :disc_only_copies, :ram_copies]
  @wait_ms 30_000

  @enforce_keys [:table, :copies]
  defstruct [:table, :copies]

  @type t :: %__MODULE__{table: atom(), copies: :disc_copies | :disc_only_copies | :ram_copies}

  @impl true
  def init(opts) do
    with {:ok, table} <- table(Keyword.get(opts, :table)),
         {:ok, copies} <- copies(Keyword.get(opts, :copies, :disc_copies)),
         :ok <- start(),
         {:ok, copies} <- ensure_table(table, copies) do
      {:ok, %__MODULE__{table: table, copies: copies}}
    end
  end

  defp table(name) when is_atom(name) and name not in [nil, true, false, :schema], do: {:ok, name}
  defp table(nil), do: {:error, {:missing_option, :table}}
  defp table(other), do: {:error, {:invalid_option, :table, other}}

  defp copies(copies) when copies in @copies, do: {:ok, copies}
  defp copies(other), do: {:error, {:invalid_option, :copies, other}}

  defp start do
    case Application.ensure_all_started(:mnesia) do
      {:ok, _} -> :ok
      {:error, reason} -> {:error, {:mnesia_not_started, reason}}
    end
  end

  defp ensure_table(table, copies) do
    definition = [{copies, [node()]}, attributes: [:key, :value], type: :set]

    case :mnesia.create_table(table, definition) do
      {:atomic, :ok} -> wait(table, copies)
      {:aborted, {:already_exists, ^table}} -> existing_table(table)
      {:aborted, {:bad_type, ^table, ^copies, _}} -> {:error, {:mnesia_needs_disc_schema, table}}
      {:aborted, reason} -> {:error, {:mnesia, reason}}
    end
  end

  defp existing_table(table) do
    case :mnesia.table_info(table, :attributes) do
      [:key, :value] -> wait(table, :mnesia.table_info(table, :storage_type))
      attributes -> {:error, {:incompatible_table, table, attributes}}
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

  @impl true
  def put(%__MODULE__{table: table}, key, value) do
    with {:ok, binary} <- Keys.to_binary(value),
         do: transaction(fn -> :mnesia.write({table, key, binary}) end)
  end

  @impl true
  def delete(%__MODULE__{table: table}, key),
    do: transaction(fn -> :mnesia.delete({table, key}) end)

  defp transaction(fun) do
    case :mnesia.transaction(fun) do
      {:atomic, :ok} -> :ok
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
  def supports_ranges?(%__MODULE__{copies: copies}), do: copies != :disc_only_copies
end
