defmodule ExZarr.Storage.Update do
  @moduledoc """
  Read-modify-write of one stored value with optimistic concurrency, as tensorstore does it
  on storage generations: read the value and its generation, compute the new value, store it
  with `ExZarr.Storage.put_if/4` on the condition that the key still holds that generation
  (or is still absent); when another writer got there first, wait and start over. Any number
  of writers (processes, OS processes, machines, as far as the store's conditions reach: see
  "Conditional writes" in `ExZarr.Storage`) can update one key without losing an update.

  `fun` is called with the current value (a binary, `nil` when the key is absent), once per
  attempt, so it must not have side effects that cannot be repeated. It answers:

    * `{:write, iodata, reply}` - store `iodata`; `run/4` returns `{:ok, reply, generation}`
      with the new value's generation;
    * `{:keep, reply}` - store nothing; `{:ok, reply, generation}` with the generation read
      (`nil` when absent);
    * `{:delete, reply}` - remove the value; `{:ok, reply, nil}`. A store with conditional
      deletes (`ExZarr.Storage.conditional_deletes?/1`: all built-in backends with conditional
      writes except S3 servers not known to honour `If-Match` on DELETE, like MinIO) deletes
      on the generation read, in one step; on the others the generation is read again just
      before an unconditional delete, so a write from another OS process or machine landing
      between that check and the delete (a window of one request) is lost; writers on this
      node are kept apart by the node lock;
    * `{:error, reason}` - stop; `run/4` returns it.

  Options:
    * `:attempts` - how many times to try before `{:error, {:write_conflict, key, attempts}}`
      (default 16);
    * `:base_backoff`, `:max_backoff` - the wait before retry `n + 1` is random between 0 and
      `min(max_backoff, base_backoff * 2^n)` ms (defaults 5 and 1,000; see
      `ExZarr.Storage.Backoff`);
    * `:node_lock` - run under the node-wide lock of the key (`ExZarr.Storage.Lock`, default
      `true`), so that writers on one node queue instead of colliding: conditions then only
      arbitrate between nodes and OS processes;
    * `:without_conditions` - what to do on a store that cannot do conditional writes:
      `:error` (default: `{:error, {:conditional_writes_unsupported, backend}}`) or
      `:node_lock` (read and put under the node-wide lock: safe only when every writer is on
      this node).

  A conditional put whose request failed in a way that leaves unknown whether it was applied
  (a connection reset after sending it) is retried by the object stores, and then refused
  because it was applied: `fun` then runs again on a value that already holds its change. A
  change that sets elements (a chunk's rows, attributes) comes out the same; one that
  increments should carry an identity that it can find in the value.
  """

  alias ExZarr.Storage
  alias ExZarr.Storage.{Backoff, Lock}

  @typedoc "The function of an update: the current value (or `nil`) to what to do."
  @type change(reply) ::
          (binary() | nil ->
             {:write, iodata(), reply} | {:keep, reply} | {:delete, reply} | {:error, term()})

  @defaults %{
    attempts: 16,
    base_backoff: 5,
    max_backoff: 1_000,
    node_lock: true,
    without_conditions: :error
  }

  @doc "Updates the value at `key` with `fun` (see the module doc); `ExZarr.Storage.update/4`."
  @spec run(Storage.t(), Storage.key(), change(reply), keyword()) ::
          {:ok, reply, Storage.generation()} | {:error, term()}
        when reply: term()
  def run(%Storage{} = store, key, fun, opts) when is_function(fun, 1) do
    with :ok <- Storage.validate_key(key), {:ok, opts} <- options(opts) do
      cond do
        Storage.conditional_writes?(store) ->
          locked(store, key, opts, fn -> attempt(store, key, fun, opts, 0) end)

        opts.without_conditions == :node_lock ->
          Lock.run(store, key, fn -> unconditional(store, key, fun) end)

        true ->
          {:error, {:conditional_writes_unsupported, store.module}}
      end
    end
  end

  def run(%Storage{}, _key, fun, _opts), do: {:error, {:invalid_argument, :fun, fun}}
  def run(store, _key, _fun, _opts), do: {:error, {:invalid_argument, Storage, store}}

  defp locked(store, key, %{node_lock: true}, fun), do: Lock.run(store, key, fun)
  defp locked(_store, _key, _opts, fun), do: fun.()

  defp attempt(store, key, fun, opts, n) do
    with {:ok, current, condition} <- read(store, key) do
      case apply_change(fun, current) do
        {:write, value, reply} ->
          case Storage.put_if(store, key, value, condition) do
            {:ok, generation} -> {:ok, reply, generation}
            {:error, :generation_mismatch} -> retry(store, key, fun, opts, n)
            error -> error
          end

        {:keep, reply} ->
          {:ok, reply, if(condition == :absent, do: nil, else: condition)}

        {:delete, reply} when condition == :absent ->
          {:ok, reply, nil}

        {:delete, reply} ->
          case delete_at(store, key, condition) do
            :ok -> {:ok, reply, nil}
            {:error, :generation_mismatch} -> retry(store, key, fun, opts, n)
            error -> error
          end

        error ->
          error
      end
    end
  end

  defp delete_at(store, key, generation) do
    if Storage.conditional_deletes?(store) do
      Storage.delete_if(store, key, generation)
    else
      # (a read of no bytes is enough to learn the generation)
      case Storage.get_ranges_with_generation(store, key, [{0, 0}]) do
        {:ok, _, ^generation} -> Storage.delete(store, key)
        {:ok, _, _other} -> {:error, :generation_mismatch}
        {:error, :not_found} -> {:error, :generation_mismatch}
        error -> error
      end
    end
  end

  defp retry(_store, key, _fun, %{attempts: attempts}, n) when n + 1 >= attempts,
    do: {:error, {:write_conflict, key, attempts}}

  defp retry(store, key, fun, opts, n) do
    Backoff.sleep(n, opts.base_backoff, opts.max_backoff)
    attempt(store, key, fun, opts, n + 1)
  end

  # The value and the condition a write of its successor needs.
  defp read(store, key) do
    case Storage.get_ranges_with_generation(store, key, [nil]) do
      {:ok, [_value], nil} -> {:error, {:generation_unknown, key}}
      {:ok, [value], generation} -> {:ok, value, generation}
      {:error, :not_found} -> {:ok, nil, :absent}
      error -> error
    end
  end

  defp unconditional(store, key, fun) do
    current =
      case Storage.get(store, key) do
        {:error, :not_found} -> {:ok, nil}
        other -> other
      end

    with {:ok, value} <- current do
      case apply_change(fun, value) do
        {:write, new, reply} -> with :ok <- Storage.put(store, key, new), do: {:ok, reply, nil}
        {:keep, reply} -> {:ok, reply, nil}
        {:delete, reply} -> with :ok <- Storage.delete(store, key), do: {:ok, reply, nil}
        error -> error
      end
    end
  end

  defp apply_change(fun, value) do
    case fun.(value) do
      {:write, _value, _reply} = write -> write
      {:keep, _reply} = keep -> keep
      {:delete, _reply} = delete -> delete
      {:error, _reason} = error -> error
      other -> {:error, {:invalid_update_result, other}}
    end
  end

  defp options(opts) do
    if Keyword.keyword?(opts) do
      Enum.reduce_while(opts, {:ok, @defaults}, fn {name, value}, {:ok, acc} ->
        case check(name, value) do
          :ok -> {:cont, {:ok, Map.put(acc, name, value)}}
          error -> {:halt, error}
        end
      end)
    else
      {:error, {:invalid_options, opts}}
    end
  end

  defp check(:attempts, n) when is_integer(n) and n > 0, do: :ok

  defp check(name, n) when name in [:base_backoff, :max_backoff] and is_integer(n) and n >= 0,
    do: :ok

  defp check(:node_lock, flag) when is_boolean(flag), do: :ok
  defp check(:without_conditions, mode) when mode in [:error, :node_lock], do: :ok

  defp check(name, value) when is_map_key(@defaults, name),
    do: {:error, {:invalid_option, name, value}}

  defp check(name, _value), do: {:error, {:unknown_option, name}}
end
