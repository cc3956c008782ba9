defmodule ExZarr.Storage.Filesystem.TempFiles do
  @moduledoc """
  The leftovers of interrupted filesystem writes, and their removal.

  A write goes to `.<name>.tmp.<16 hex digits>` next to its key and is renamed over it. When
  the OS process dies in between (killed, power loss), the temporary file stays. They are
  never listed as keys, and they are removed:

    * below a node that is deleted or overwritten (`ExZarr.Storage.delete_prefix/2`, used by
      `create(overwrite: true)` and `ExZarr.Group.delete/2`): all of them;
    * in the folder of a key that is deleted (a resize's deletions, a chunk of fill values):
      those older than `stale_after/0`, once per folder per that time;
    * by `ExZarr.Storage.Filesystem.sweep_temp_files/2`, the sweep a user runs on a store.

  A write in progress keeps its temporary file's modification time current, so a file that has
  not changed for `stale_after/0` seconds is a leftover, not a write that is still going on.
  """

  require Record
  Record.defrecordp(:file_info, Record.extract(:file_info, from_lib: "kernel/include/file.hrl"))

  alias ExZarr.Storage.{Filesystem, TableOwner}

  @pattern ~r/\A\..+\.tmp\.[0-9a-f]{16}\z/
  @stale_after 60
  # Folders swept lately (by key deletes), so that deleting many keys of one folder reads it once.
  @swept :ex_zarr_swept_folders
  @max_swept 10_000

  @doc "Whether a file name is the temporary file of a write."
  @spec temp_name?(String.t()) :: boolean()
  def temp_name?(name), do: Regex.match?(@pattern, name)

  @doc "Seconds without a change after which a temporary file counts as a leftover (60)."
  @spec stale_after() :: pos_integer()
  def stale_after, do: @stale_after

  @doc """
  Removes the temporary files below `dir`, recursively (symlinks are not followed), that were
  last modified `older_than` seconds ago or earlier (`0`: all of them). Returns how many were
  removed.
  """
  @spec sweep(String.t(), non_neg_integer()) :: {:ok, non_neg_integer()} | {:error, term()}
  def sweep(dir, older_than) do
    cutoff = if older_than == 0, do: :all, else: System.os_time(:second) - older_than
    sweep_dir(dir, cutoff, 0)
  end

  defp sweep_dir(dir, cutoff, count) do
    with {:ok, names} <- Filesystem.names(dir) do
      reduce_ok(names, count, &sweep_entry(Path.join(dir, &1), &1, cutoff, &2))
    end
  end

  defp sweep_entry(path, name, cutoff, count) do
    case :file.read_link_info(path, [:raw, time: :posix]) do
      {:ok, file_info(type: :directory)} ->
        sweep_dir(path, cutoff, count)

      {:ok, file_info(type: :regular, mtime: mtime)} ->
        if temp_name?(name) and (cutoff == :all or mtime <= cutoff),
          do: remove(path, count + 1),
          else: {:ok, count}

      _ ->
        {:ok, count}
    end
  end

  defp remove(path, count) do
    case :file.delete(path, [:raw]) do
      :ok -> {:ok, count}
      {:error, :enoent} -> {:ok, count}
      {:error, reason} -> {:error, {:file_error, reason, path}}
    end
  end

  defp reduce_ok(items, first, fun) do
    Enum.reduce_while(items, {:ok, first}, fn item, {:ok, acc} ->
      case fun.(item, acc) do
        {:ok, acc} -> {:cont, {:ok, acc}}
        error -> {:halt, error}
      end
    end)
  end

  @doc """
  Removes the stale temporary files (see `stale_after/0`) directly in `dir`, unless that was
  done within the last `stale_after/0` seconds on this node. Best effort: a folder that
  cannot be read is left as it is.
  """
  @spec sweep_stale_once(String.t()) :: :ok
  def sweep_stale_once(dir) do
    now = System.monotonic_time(:second)

    if recently_swept?(dir, now) do
      :ok
    else
      _ = sweep_flat(dir)
      remember(dir, now)
    end
  end

  defp sweep_flat(dir) do
    cutoff = System.os_time(:second) - @stale_after

    with {:ok, names} <- Filesystem.names(dir) do
      names
      |> Enum.filter(&temp_name?/1)
      |> reduce_ok(0, &sweep_entry(Path.join(dir, &1), &1, cutoff, &2))
    end
  end

  defp recently_swept?(dir, now) do
    case :ets.lookup(swept_table(), dir) do
      [{_, at}] -> now - at < @stale_after
      [] -> false
    end
  rescue
    ArgumentError -> false
  end

  defp remember(dir, now) do
    table = swept_table()
    if :ets.info(table, :size) >= @max_swept, do: :ets.delete_all_objects(table)
    :ets.insert(table, {dir, now})
    :ok
  rescue
    ArgumentError -> :ok
  end

  defp swept_table do
    case :ets.whereis(@swept) do
      :undefined ->
        case TableOwner.create(name: @swept) do
          {:ok, table} -> table
          {:error, _} -> @swept
        end

      table ->
        table
    end
  catch
    # No table owner (the application is not started): nothing is remembered.
    :exit, _ -> @swept
  end
end
