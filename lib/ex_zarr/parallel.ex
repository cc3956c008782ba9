defmodule ExZarr.Parallel do
  @moduledoc false
  # The one place where ExZarr runs work concurrently, and its policy: how many tasks for each
  # kind of work, and when work is too small to pay for tasks at all.
  #
  # Kinds of work and their default number of tasks in flight (`concurrency/2`):
  #
  #   * `:chunks` of a local store: two more than the dirty CPU schedulers. Chunks are decoded
  #     and encoded there but read and stored on the dirty I/O schedulers: the extra chunks keep
  #     the codecs busy while others wait on the store (measurements: bench/README.md,
  #     "Measured defaults"). A remote store says what it prefers
  #     (`ExZarr.Storage.io_concurrency/1`).
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
  @type kind :: :chunks | :requests | :nodes | :cpu

  @min_bytes 512 * 1024
  @requests 16

  @doc """
  The default number of tasks for `kind` of work; for `:chunks`, `storage` (when given) may
  prefer its own (`ExZarr.Storage.io_concurrency/1`). `opts[:max_concurrency]` overrides;
  `opts[:max_in_flight]` (default `:infinity`) bounds either (what memory holds of the items).
  """
  @spec concurrency(kind(), Storage.t() | nil, keyword()) :: pos_integer()
  def concurrency(kind, storage \\ nil, opts \\ [])

  def concurrency(kind, storage, opts) do
    within(Keyword.get(opts, :max_concurrency) || default(kind, storage), opts)
  end

  defp within(n, opts), do: min(n, Keyword.get(opts, :max_in_flight, :infinity))

  defp default(:chunks, %Storage{} = storage),
    do: Storage.io_concurrency(storage) || local_chunks()

  defp default(:chunks, nil), do: local_chunks()
  defp default(:requests, _storage), do: @requests
  defp default(:nodes, _storage), do: 2 * System.schedulers_online()
  defp default(:cpu, _storage), do: System.schedulers_online()

  defp local_chunks, do: :erlang.system_info(:dirty_cpu_schedulers_online) + 2

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
  Maps `fun` over the chunks of one call on `storage`, `bytes` of work in all: `:chunks`
  concurrency (`max_concurrency:` and `max_in_flight:` as in `concurrency/3`; the store is
  asked once), results in the order they complete, `timeout:` per chunk. On a local store,
  work under 512 KiB in all stays in the calling process; a remote store always gets tasks
  (its requests wait on the network).
  """
  @spec chunks([term()], (term() -> term()), Storage.t(), non_neg_integer(), keyword()) ::
          [term()]
  def chunks(items, fun, storage, bytes, opts) do
    io = Storage.io_concurrency(storage)

    map(items, fun,
      max_concurrency: within(Keyword.get(opts, :max_concurrency) || io || local_chunks(), opts),
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
