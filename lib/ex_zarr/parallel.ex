defmodule ExZarr.Parallel do
  @moduledoc false
  # The one place where ExZarr runs work concurrently, and its policy: how many tasks for each
  # kind of work, and when work is too small to pay for tasks at all.
  #
  # Kinds of work and their default number of tasks in flight (`concurrency/2`):
  #
  #   * `:chunks` read from a local store: two more than the dirty CPU schedulers. Chunks are
  #     decoded there, and read from the page cache by their tasks (on a dirty I/O scheduler
  #     when the read waits for the disk): the extra chunks keep the decoders busy while
  #     others wait on the store. A remote store says what it prefers
  #     (`ExZarr.Storage.io_concurrency/1`).
  #   * `:chunk_writes` to a local store: as for reads, and while they hold at most 4 MiB
  #     together (`chunk_bytes:` each), up to four more. Every chunk written waits for its file
  #     on a dirty I/O scheduler, longer for the chunk's size than a read waits, and small
  #     chunks left the encoders idle with two more (measurements for both: bench/README.md,
  #     "Measured defaults"). A remote store: as for reads.
  #   * `:requests`: ranged reads of one object, or the shard reads of one region: 16 (they
  #     wait on storage far more than on the CPU).
  #   * `:nodes`: metadata documents of a hierarchy: twice the schedulers (small, I/O-bound).
  #   * `:cpu`: work in memory (the inner chunks of a shard): one task per scheduler, items
  #     handed out in batches so that thousands of small chunks cost a few spawns.
  #
  # Work estimated below 512 KiB in all (`min_bytes:`) runs in the calling process: below that,
  # spawning tasks costs more than it saves.

  alias ExZarr.{Result, Storage}

  @typedoc "A kind of work (see the moduledoc)."
  @type kind :: :chunks | :chunk_writes | :requests | :nodes | :cpu

  @min_bytes 512 * 1024
  @requests 16

  @doc """
  The default number of tasks for `kind` of work; for `:chunks` and `:chunk_writes`,
  `storage` (when given) may prefer its own (`ExZarr.Storage.io_concurrency/1`), and
  `:chunk_writes` depends on `opts[:chunk_bytes]` (the size of a chunk).
  `opts[:max_concurrency]` overrides; `opts[:max_in_flight]` (default `:infinity`) bounds
  either (what memory holds of the items).
  """
  @spec concurrency(kind(), Storage.t() | nil, keyword()) :: pos_integer()
  def concurrency(kind, storage \\ nil, opts \\ [])

  def concurrency(kind, storage, opts) do
    within(Keyword.get(opts, :max_concurrency) || default(kind, storage, opts), opts)
  end

  defp within(n, opts), do: min(n, Keyword.get(opts, :max_in_flight, :infinity))

  defp default(kind, %Storage{} = storage, opts) when kind in [:chunks, :chunk_writes],
    do: Storage.io_concurrency(storage) || local(kind, opts)

  defp default(kind, nil, opts) when kind in [:chunks, :chunk_writes], do: local(kind, opts)
  defp default(:requests, _storage, _opts), do: @requests
  defp default(:nodes, _storage, _opts), do: 2 * System.schedulers_online()
  defp default(:cpu, _storage, _opts), do: System.schedulers_online()

  @write_extra_bytes 4 * 1024 * 1024

  defp local(:chunks, _opts), do: :erlang.system_info(:dirty_cpu_schedulers_online) + 2

  defp local(:chunk_writes, opts) do
    extra =
      case Keyword.get(opts, :chunk_bytes) do
        bytes when is_integer(bytes) and bytes > 0 -> min(4, div(@write_extra_bytes, bytes))
        _unknown -> 0
      end

    local(:chunks, opts) + extra
  end

  @doc """
  Maps `fun` over `items`, in up to `max_concurrency:` tasks (default
  `concurrency(:cpu)`), and returns the results. Options:

    * `ordered:` (default true) results in the order of `items`; false returns them as they
      complete;
    * `timeout:` per item (default `:infinity`); an item that takes longer is killed and
      gives `{:error, {:chunk_task_failed, :timeout}}`;
    * `bytes:` an estimate of the work's bytes in all: below `min_bytes:` (default 512 KiB)
      the items run in the calling process; without it, two items or more always get tasks;
    * `batch:` (default false) hand items to the tasks in batches, a few per task.
  """
  @spec map([term()], (term() -> term()), keyword()) :: [term()]
  def map(items, fun, opts \\ [])

  def map([_, _ | _] = items, fun, opts) do
    if worth_tasks?(opts) do
      n = concurrency(:cpu, nil, opts)

      if Keyword.get(opts, :batch, false) do
        size = max(1, div(length(items), 4 * n))

        items
        |> Enum.chunk_every(size)
        |> run(&Enum.map(&1, fun), n, opts)
        |> Enum.flat_map(fn
          {:error, {:chunk_task_failed, _}} = error -> [error]
          results -> results
        end)
      else
        run(items, fun, n, opts)
      end
    else
      Enum.map(items, fun)
    end
  end

  def map(items, fun, _opts), do: Enum.map(items, fun)

  defp worth_tasks?(opts) do
    case Keyword.get(opts, :bytes) do
      nil -> true
      bytes -> bytes >= Keyword.get(opts, :min_bytes, @min_bytes)
    end
  end

  defp run(items, fun, n, opts), do: items |> async(fun, n, opts) |> Enum.map(&result/1)

  # Tasks for `items`, `n` at a time; an item over its timeout is killed (`result/1` reports it).
  defp async(items, fun, n, opts) do
    Task.async_stream(items, fun,
      max_concurrency: n,
      ordered: Keyword.get(opts, :ordered, true),
      timeout: Keyword.get(opts, :timeout, :infinity),
      on_timeout: :kill_task
    )
  end

  @doc """
  Maps `fun` over the chunks of one call on `storage`, `bytes` of work in all, as `kind` of
  work (`:chunks` to read, `:chunk_writes` to write: its default concurrency, with
  `max_concurrency:`, `max_in_flight:` and `chunk_bytes:` as in `concurrency/3`; the store
  is asked once), results in the order they complete, `timeout:` per chunk. On a local
  store, work under 512 KiB in all stays in the calling process; a remote store always gets
  tasks (its requests wait on the network).
  """
  @spec chunks(
          [term()],
          (term() -> term()),
          Storage.t(),
          non_neg_integer(),
          keyword(),
          :chunks | :chunk_writes
        ) :: [term()]
  def chunks(items, fun, storage, bytes, opts, kind \\ :chunks) do
    io = Storage.io_concurrency(storage)

    map(items, fun,
      max_concurrency:
        within(Keyword.get(opts, :max_concurrency) || io || local(kind, opts), opts),
      ordered: false,
      timeout: Keyword.get(opts, :timeout, :infinity),
      bytes: if(io == nil, do: bytes)
    )
  end

  @doc """
  Like `map/3` but lazy, for streams, with `fun` giving `{:ok, value}` or `{:error, reason}`:
  the stream gives the values, and an error, or an item over its `timeout:` (killed), raises
  `ExZarr.Error` in the consuming process (never in a task, which would kill the consumer
  through its link). With `max_concurrency: 1` the items are mapped in the consuming process
  (constant memory); otherwise memory stays bounded by `max_concurrency` results in flight.
  `ordered:` (default true).
  """
  @spec stream(Enumerable.t(), (term() -> {:ok, term()} | {:error, term()}), keyword()) ::
          Enumerable.t()
  def stream(items, fun, opts) do
    case concurrency(:cpu, nil, opts) do
      1 ->
        Stream.map(items, &Result.unwrap!(fun.(&1)))

      n ->
        items |> async(fun, n, opts) |> Stream.map(&Result.unwrap!(result(&1)))
    end
  end

  defp result({:ok, result}), do: result
  defp result({:exit, reason}), do: {:error, {:chunk_task_failed, reason}}
end
