defmodule ExZarr.Jobs do
  @moduledoc """
  Map, reduce and copy whole arrays block by block, on this node or over a cluster of BEAM
  nodes (OTP distribution: `:erpc`), surviving the loss of nodes.

      {:ok, report} = ExZarr.Jobs.map_blocks(source, target, {MyMod, :double, []}, nodes: Node.list())
      {:ok, sum} = ExZarr.Jobs.reduce_blocks(source, &MyMod.sum/2, &+/2, nodes: [node() | Node.list()])
      {:ok, target} = ExZarr.copy(source, [path: "b.zarr", chunks: {64, 64}, zarr_format: 2], [])
      {:ok, group} = ExZarr.copy_group(source_group, [path: "s3://bucket/t.zarr"], nodes: nodes)

  `copy/3` and `copy_group/3` (also as `ExZarr.copy/3` and `ExZarr.copy_group/3`, and
  `mix zarr.copy`) convert formats, recompress, rechunk and reshard.

  ## Work units

  A unit is a block of whole target chunks (`block:`, chunks per unit along each dimension,
  default one; `copy/3`'s default is `:auto`, below): a sharded array's chunks are its
  shards, so a shard is never split. The node running a unit reads the source data of the
  unit's box itself (`ExZarr.Array.get_slice/2`: no array data goes through the
  coordinator), calls `fun` with it and `%{start: tuple, stop: tuple}`, and writes what `fun` returns over the same box of the
  target (`fun` returns the data, or `{:ok, data}`; `{:error, reason}` fails the unit).
  `fun` is `{module, function, extra_args}` (called as
  `apply(module, function, [data, box | extra_args])`) or a 2-arity function; either way its
  module must be loaded on every node of `nodes:` (an anonymous function refers to the module
  that defines it). `reduce_blocks/4` units are blocks of source chunks; their values are
  folded with `combine` on the coordinator in the order they arrive, so `combine` must be
  associative and commutative.

  ## Options

    * `nodes:` the nodes to run on (default `[node()]`);
    * `max_concurrency:` units in flight per node (default 2);
    * `block:` target chunks per unit: a tuple, an integer for the first dimension, or
      `:auto` (see Planning; the default of `copy/3`);
    * `retries:` how many times a unit may be handed out again after a failure (default 3);
    * `timeout:` per unit, milliseconds or `:infinity` (default);
    * `on_progress:` a 1-arity function called on the coordinator after each unit done with
      `%{done:, total:, failed:, by_node:}` (`failed`: attempts that failed so far);
    * `max_memory:` bytes per node (see Memory), and for copies `temp_store:`.

  `map_blocks/4` and `copy/3` (which then reuses the target an earlier run created) take
  `resume:` (default false): each unit done is recorded in a small journal in the target's
  store (one empty object per unit under `.exzarr_jobs/<job id>/` beside the array's
  chunks), so that a run of the same job (same arrays, function, extra arguments or captured
  values, and units) after a coordinator died skips the units done; the journal is deleted
  when the job completes.

  ## Memory

  A node holds at most `max_concurrency` units at a time. `max_memory:` (bytes per node,
  `map_blocks/4` and `copy/3`) bounds them further: a unit is counted as the source chunks
  its box touches (whole chunks, or a sharded source's inner chunks; decoded and encoded),
  its box read and its result, and the target chunks it writes (decoded and encoded), and a
  node gets a unit only while the units it runs stay under `max_memory`. A unit that alone
  needs more fails the job before it starts with
  `{:error, {:max_memory_too_small, %{needed: bytes, max_memory: bytes}}}` (variable-length
  dtypes have no size: `{:error, {:max_memory_unsupported_dtype, dtype}}`). The coordinator
  keeps besides a few hundred bytes per unit of the job (its box, its count), whatever
  `max_memory`.

  ## Planning

  A unit decodes every source chunk its box touches, whole, so units of one target chunk
  each may decode a source chunk many times: from row chunks to column chunks, each reads
  the whole source. `block: :auto` picks the block whose units decode the fewest source
  chunks again, within `max_memory / max_concurrency` bytes per unit (by the count above;
  without `max_memory:`, 256 MiB per node: a fixed figure, so that a run resumed on another
  node plans the same units), while the nodes share the work: it estimates a job's time as
  the units each node runs in turn times the largest unit's work (source bytes decoded,
  target bytes encoded), a unit already decoding and encoding its chunks in parallel on its
  node, and among equal estimates takes more units. A 16 MB array from row to column chunks
  becomes one unit on one node and two on two nodes, each decoding the source once; chunks
  that line up keep units of one target chunk. The plan depends on the number of nodes:
  a job resumed with another number of them starts over.

  `copy/3` runs the direct plan: units of target chunks, `block: :auto` unless given, that
  read the source chunks their box touches. When even the planned units decode the source
  more than 8 times over (an intermediate array cost about as much as 8 to 16 decodes of the
  source in a 16 MB rechunk on the filesystem), or when with `max_memory:` even a unit of
  one target chunk does not fit, it copies through an intermediate array instead, with
  rechunker's algorithm, given `max_memory / max_concurrency` per unit (256 MiB per node
  without `max_memory:`): write chunks (target chunks consolidated to that budget), read
  chunks (source chunks consolidated to it, no larger than the write chunks) and
  intermediate chunks (the smaller of the two along each axis). The intermediate array is
  its chunks alone (the nodes take its metadata from the job) below a fresh prefix
  `.exzarr_rechunk_<16 hex digits>` of `temp_store:` (storage options and `prefix:`, as for
  `ExZarr.create/1`). By default it is `System.tmp_dir!/0` when every node of the job has
  that same temporary folder and sees a folder this node makes there (the nodes run on this
  host, or share that folder): a zip target would keep the dead bytes, and a 67 MB rechunk
  into a local MinIO took 2.3 times as long with it in the target (on the filesystem as
  long). Otherwise it is the target's own store, inside the target (`<target
  prefix>/.exzarr_rechunk_…/`, beside the journal), which every node writes to anyway:
  inside an array and without metadata it is no member of any group (for ExZarr,
  zarr-python and the like), and with its dot no chunk key. It is uncompressed (each of its
  chunks is written once and read once, soon after: a 4 MB rechunk took a third of the time
  it took with zstd), sharded with one shard per stage-one unit (which writes it whole: one object instead of one per
  intermediate chunk; stage two reads its inner chunks: a 16 MB rechunk from 32 row chunks
  to 32 column chunks went from 2 s to 0.2 s), and removed afterwards
  (`ExZarr.Storage.delete_prefix/2`), also when the copy fails or raises. Such a copy starts
  over when run again (`resume:` applies to the direct plan), and one given `block:` has no
  other plan. A 268 MB float32 rechunk from `{64, 8192}` to `{8192, 64}` chunks with zstd
  took 1 s on 2 `:peer` nodes this way, 16 s with the direct plan.

  ## Report

  The report of `map_blocks/4`: `units` (done by this run), `skipped` (done by an earlier run,
  with `resume: true`), `failed` (attempts that raised, exited, returned an error or timed
  out), `retries` (units handed out again: failed attempts and units whose node was lost),
  `nodes_lost` (the nodes that went down or could not be reached), `by_node` (units done per
  node), `peak_bytes` (the most bytes a node held by the count above, with `max_memory:`),
  `bytes_read`, `bytes_written` and `time_ms`. `copy_with_report/3` adds the plan.

  ## Faults

  The coordinator (the calling process) hands units out on demand, at most `max_concurrency`
  per node, each by an `:erpc` call from a local process that it monitors. A unit whose node
  goes down (or cannot be reached) is handed to another node, and that node gets no more
  units; a unit that raises, exits, returns an error or times out is handed out again. Each
  of those counts as a retry in the report; a unit that fails `retries + 1` times (a node
  lost does not count against the unit) fails the job with
  `{:error, {:unit_failed, %{start: _, stop: _}, reason}}`, and a job whose nodes are all down
  is `{:error, {:no_nodes_left, reason}}`. A failed job (or one whose `on_progress` or
  `combine` raised) returns once the units in flight have ended: none writes afterwards.
  A retry is safe: a unit writes whole target chunks, so running it twice writes the same
  bytes.

  ## Stores

  Another node reopens each array from its storage description, prefix and metadata, so only
  stores every node reaches without local processes or tables work across nodes: filesystem
  (a path shared by the nodes), S3, GCS, Azure and GridFS. With nodes other than `node()`
  any other store (memory, ETS, zip, Mnesia, a `cache:` in front of a store) is refused with
  `{:error, {:store_not_shared, backend}}`.
  """

  alias ExZarr.{Array, ChunkGrid, Limits, Metadata, Options, Storage}
  alias ExZarr.Jobs.{Journal, Plan}

  @shared [
    ExZarr.Storage.Filesystem,
    ExZarr.Storage.S3,
    ExZarr.Storage.GCS,
    ExZarr.Storage.Azure,
    ExZarr.Storage.GridFS
  ]
  @job_opts [:nodes, :max_concurrency, :block, :retries, :timeout, :on_progress]
  @map_opts [:resume, :max_memory | @job_opts]
  @copy_opts [:temp_store | @map_opts]
  @codec_opts [:codecs, :compressor, :filters, :shards]
  # the memory per node `block: :auto` plans for without `max_memory:` (256 MiB)
  @default_memory 256 * 1024 * 1024
  # a copy whose direct units decode the source more times over goes through an intermediate
  # array (see Planning)
  @max_rereads 8

  @typedoc "A block function: `{module, function, extra_args}` or a 2-arity function."
  @type block_fun :: {module(), atom(), list()} | (term(), box() -> term())
  @type box :: %{start: tuple(), stop: tuple()}
  @type report :: %{
          units: non_neg_integer(),
          skipped: non_neg_integer(),
          retries: non_neg_integer(),
          failed: non_neg_integer(),
          nodes_lost: [node()],
          peak_bytes: non_neg_integer(),
          by_node: %{node() => non_neg_integer()},
          bytes_read: non_neg_integer(),
          bytes_written: non_neg_integer(),
          time_ms: non_neg_integer()
        }

  @doc """
  Runs `fun` over every block of target chunks: reads the source box, writes `fun`'s result
  over the same box of the target. `source` and `target` have the same shape.
  """
  @spec map_blocks(Array.t(), Array.t(), block_fun(), keyword()) ::
          {:ok, report()} | {:error, term()}
  def map_blocks(%Array{} = source, %Array{} = target, fun, opts) do
    with {:ok, conf} <- config(opts, [source, target], fun, @map_opts),
         :ok <- same_shape(source, target),
         conf = auto_block(conf, source, target),
         {:ok, units} <- units(target, conf.block),
         {:ok, conf} <- unit_costs(conf, source, target, units),
         journal = journal(conf, source, target, fun, units),
         {:ok, todo} <- Journal.pending(target.storage, journal, units),
         {:ok, report} <-
           run({:map, ref(source), ref(target), fun, journal}, todo, conf, &map_acc/2, %{
             bytes_read: 0,
             bytes_written: 0
           }),
         :ok <- Journal.clear(target.storage, journal) do
      {:ok, Map.put(report, :skipped, length(units) - length(todo))}
    end
  end

  def map_blocks(source, target, _fun, _opts),
    do:
      {:error, {:invalid_argument, Array, if(is_struct(source, Array), do: target, else: source)}}

  @doc """
  Maps `fun` over every block of source chunks on the nodes and folds the values with
  `combine` (associative and commutative) as they arrive: `{:ok, value}`, `{:ok, nil}` for
  an array without elements.
  """
  @spec reduce_blocks(Array.t(), block_fun(), (term(), term() -> term()), keyword()) ::
          {:ok, term()} | {:error, term()}
  def reduce_blocks(%Array{} = source, fun, combine, opts) when is_function(combine, 2) do
    with {:ok, conf} <- config(opts, [source], fun),
         conf = auto_block(conf, source, source),
         {:ok, units} <- units(source, conf.block),
         {:ok, report} <-
           run({:reduce, ref(source), fun}, units, conf, &reduce_acc(&1, &2, combine), %{
             value: :none
           }) do
      {:ok, if(report.value == :none, do: nil, else: report.value)}
    end
  end

  def reduce_blocks(%Array{}, _fun, combine, _opts),
    do: {:error, {:invalid_option, :combine, combine}}

  def reduce_blocks(source, _fun, _combine, _opts),
    do: {:error, {:invalid_argument, Array, source}}

  @doc """
  Creates a target array from the source's metadata (shape, dtype, chunks, fill value,
  attributes, format; its codecs too when `target_opts` gives none of `shards`, `codecs`,
  `compressor`, `filters`, keeps the format and does not rechunk a sharded source)
  overridden by `target_opts` (the options of `ExZarr.create/1`), and copies the data with
  `map_blocks/4`, units aligned to the target's chunks, each reading its box of the source
  with `ExZarr.Array.get_slice/2`. `opts` are those of `map_blocks/4`, checked before the
  target is created.
  """
  @spec copy(Array.t(), keyword(), keyword()) :: {:ok, Array.t()} | {:error, term()}
  def copy(source, target_opts, opts) do
    with {:ok, target, _report} <- copy_with_report(source, target_opts, opts), do: {:ok, target}
  end

  @doc """
  `copy/3` that also returns the report: that of `map_blocks/4` plus `plan` (`:direct` or
  `:intermediate`); through an intermediate array also `chunks` (`%{read:, write:,
  intermediate:}`, rechunker's chunk shapes) and `stages` (the report of each of the two
  copies), the counts and bytes being their sums.
  """
  @spec copy_with_report(Array.t(), keyword(), keyword()) ::
          {:ok, Array.t(), map()} | {:error, term()}
  def copy_with_report(%Array{metadata: meta} = source, target_opts, opts)
      when is_list(target_opts) do
    with :ok <- Options.check_keyword(target_opts),
         :ok <- Options.check(opts, @copy_opts),
         {temp, map_opts} = Keyword.pop(opts, :temp_store),
         {:ok, conf} <- config(map_opts, [source], {__MODULE__, :identity, []}, @map_opts),
         :ok <- opt_temp_store(temp),
         {:ok, target_opts} <- check_target(source, target_opts),
         {:ok, target} <- copy_target(meta, target_opts, conf.resume),
         {:ok, report} <- copy_data(source, target, conf, temp, map_opts) do
      {:ok, target, report}
    end
  end

  def copy_with_report(%Array{}, target_opts, _opts),
    do: {:error, {:invalid_argument, :target_opts, target_opts}}

  def copy_with_report(source, _target_opts, _opts),
    do: {:error, {:invalid_argument, Array, source}}

  defp opt_temp_store(nil), do: :ok

  defp opt_temp_store(temp) do
    if Keyword.keyword?(temp) and temp != [],
      do: :ok,
      else: {:error, {:invalid_option, :temp_store, temp}}
  end

  @identity {__MODULE__, :identity, []}

  # The direct plan (units of target chunks reading the source), with `block: :auto` (the
  # default) rechunker's plan through an intermediate array when that is better (see
  # Planning).
  defp copy_data(source, target, conf, temp, opts) do
    if Keyword.get(opts, :block, :auto) == :auto,
      do: copy_planned(source, target, conf, temp, opts),
      else: copy_direct(source, target, opts)
  end

  # `block: :auto`: the direct plan's units, unless they decode the source more than
  # `@max_rereads` times over or do not fit `max_memory:` (see Planning).
  defp copy_planned(source, target, conf, temp, opts) do
    conf = auto_block(%{conf | block: :auto}, source, target)

    with :ok <- check_unit_count(target, conf.block) do
      if rereads(source, target, conf.block) > @max_rereads do
        through_intermediate(source, target, conf, temp, opts)
      else
        case copy_direct(source, target, Keyword.put(opts, :block, List.to_tuple(conf.block))) do
          {:error, {:max_memory_too_small, _}} ->
            through_intermediate(source, target, conf, temp, opts)

          other ->
            other
        end
      end
    end
  end

  defp copy_direct(source, target, opts) do
    with {:ok, report} <- map_blocks(source, target, @identity, opts),
         do: {:ok, Map.put(report, :plan, :direct)}
  end

  defp rereads(source, target, block) do
    case grids(source, target) do
      {:ok, src, dst} -> Plan.rereads(src, dst, block)
      {:error, _} -> 1
    end
  end

  # The read grid of the source and the write grid of the target (`ExZarr.Jobs.Plan`).
  defp grids(source, target) do
    with {:ok, src} <- Plan.grid(source.metadata, :read),
         {:ok, dst} <- Plan.grid(target.metadata, :write),
         do: {:ok, src, dst}
  end

  defp through_intermediate(source, target, conf, temp, opts) do
    with {:ok, src, dst} <- grids(source, target),
         plan = Plan.rechunk(src, dst, div(conf.max_memory || @default_memory, conf.conc)),
         {:ok, int, cleanup} <- intermediate(source.metadata, target, plan, temp, conf.nodes) do
      opts = opts |> Keyword.put(:resume, false) |> Keyword.delete(:block)

      try do
        with {:ok, one} <-
               map_blocks(source, int, @identity, [block: List.to_tuple(plan.block1)] ++ opts),
             {:ok, two} <-
               map_blocks(int, target, @identity, [block: List.to_tuple(plan.block2)] ++ opts) do
          chunks = Map.take(plan, [:read, :write, :intermediate])
          {:ok, Map.merge(sum_reports(one, two), %{plan: :intermediate, chunks: chunks})}
        end
      after
        cleanup.()
      end
    end
  end

  # The intermediate array (see Planning) and the function that removes it. Its metadata
  # lives only in the job (the nodes reopen arrays from it): nothing but its chunks is written,
  # under a fresh prefix whose name starts with a dot, so no listing of nodes takes it for one.
  defp intermediate(meta, target, plan, temp, nodes) do
    id = ".exzarr_rechunk_" <> Base.encode16(:crypto.strong_rand_bytes(8), case: :lower)

    with {:ok, storage, parent} <- temp_location(temp, target, nodes, id),
         prefix = Path.join(parent, id),
         {:ok, int_meta} <-
           Metadata.new(
             shape: meta.shape,
             dtype: meta.dtype,
             chunks: List.to_tuple(plan.intermediate),
             shards: List.to_tuple(Enum.zip_with(plan.intermediate, plan.block1, &(&1 * &2))),
             fill_value: meta.fill_value,
             zarr_format: 3,
             compressor: nil
           ),
         {:ok, int} <- Array.new(int_meta, storage, prefix: prefix) do
      {:ok, int, fn -> Storage.delete_prefix(storage, prefix) end}
    end
  end

  # The store and prefix the intermediate array goes below: `temp_store:`; by default the
  # system's temporary folder of this node when every node shares it (`shared_temp?/3`),
  # else the target's own store, in the target (every node writes there).
  defp temp_location(nil, target, nodes, id) do
    tmp = System.tmp_dir!()

    if shared_temp?(nodes, tmp, id) do
      with {:ok, storage} <- Storage.new(:filesystem, path: tmp), do: {:ok, storage, ""}
    else
      {:ok, target.storage, target.prefix}
    end
  end

  defp temp_location(temp, _target, _nodes, _id) do
    with {:ok, storage_opts, rest} <- ExZarr.split_storage_options(temp),
         :ok <- Options.check(rest, [:prefix]),
         {:ok, storage} <- ExZarr.storage(storage_opts),
         do: {:ok, storage, Keyword.get(rest, :prefix, "")}
  end

  # Whether every node has `tmp` as its temporary folder and sees the folder `id` this node
  # makes there (the nodes run on this host, or share that folder): that folder becomes the
  # intermediate array's, else it goes.
  @probe_timeout 5_000
  defp shared_temp?(nodes, tmp, id) do
    marker = Path.join(tmp, id)

    case {nodes -- [node()], File.mkdir_p(marker)} do
      {[], _} ->
        true

      {others, :ok} ->
        answers = fn mod, fun, args -> :erpc.multicall(others, mod, fun, args, @probe_timeout) end

        shared =
          Enum.all?(answers.(System, :tmp_dir, []), &(&1 == {:ok, tmp})) and
            Enum.all?(answers.(File, :dir?, [marker]), &(&1 == {:ok, true}))

        unless shared, do: File.rm_rf(marker)
        shared

      {_others, {:error, _}} ->
        false
    end
  end

  defp sum_reports(one, two) do
    sums = [:units, :skipped, :retries, :failed, :bytes_read, :bytes_written, :time_ms]

    Map.new(sums, &{&1, one[&1] + two[&1]})
    |> Map.merge(%{
      nodes_lost: Enum.uniq(one.nodes_lost ++ two.nodes_lost),
      peak_bytes: max(one.peak_bytes, two.peak_bytes),
      by_node: Map.merge(one.by_node, two.by_node, fn _node, a, b -> a + b end),
      stages: [one, two]
    })
  end

  @doc """
  Copies a group and everything below it: the target root group at the store and `prefix:`
  of `target_opts` (format `zarr_format:`, default the source's; the source's attributes),
  each subgroup with its attributes, and each array with `copy/3`, given the rest of
  `target_opts` (`compressor`, `codecs`, ...: they apply to every array). `opts` are those of
  `map_blocks/4`.
  """
  @spec copy_group(ExZarr.Group.t(), keyword(), keyword()) ::
          {:ok, ExZarr.Group.t()} | {:error, term()}
  def copy_group(%ExZarr.Group{} = source, target_opts, opts) when is_list(target_opts) do
    format = Keyword.get(target_opts, :zarr_format, source.metadata.zarr_format)
    prefix = Keyword.get(target_opts, :prefix, "")

    with :ok <- Options.check_keyword(target_opts),
         {:ok, storage_opts, rest} <- ExZarr.split_storage_options(target_opts),
         :ok <- Options.check(opts, @copy_opts),
         {:ok, members} <- ExZarr.Group.members(source, recursive: true),
         {:ok, store} <- ExZarr.storage(storage_opts),
         {:ok, root} <-
           ExZarr.create_group(
             storage: store,
             prefix: prefix,
             zarr_format: format,
             attributes: ExZarr.Group.attributes(source)
           ) do
      array_opts =
        [storage: store, zarr_format: format] ++ Keyword.drop(rest, [:prefix, :zarr_format])

      Enum.reduce_while(members, {:ok, root}, fn member, ok ->
        case copy_member(member, root, prefix, array_opts, opts) do
          {:ok, _} -> {:cont, ok}
          {:error, reason} -> {:halt, {:error, {:member, elem(member, 0), reason}}}
        end
      end)
    end
  end

  def copy_group(%ExZarr.Group{}, target_opts, _opts),
    do: {:error, {:invalid_argument, :target_opts, target_opts}}

  def copy_group(source, _target_opts, _opts),
    do: {:error, {:invalid_argument, ExZarr.Group, source}}

  defp copy_member({path, %ExZarr.Group{} = group}, root, _prefix, _array_opts, _opts),
    do: ExZarr.Group.create_group(root, path, attributes: ExZarr.Group.attributes(group))

  defp copy_member({path, %Array{} = array}, _root, prefix, array_opts, opts) do
    full = if prefix == "", do: path, else: String.trim_trailing(prefix, "/") <> "/" <> path
    copy(array, [prefix: full] ++ array_opts, opts)
  end

  @doc false
  def identity(data, _box), do: data

  # Before anything is created or overwritten: the target keeps the source's shape and data
  # type (blocks are copied as bytes), and is not the source, inside it, or a node above it
  # (that `overwrite: true` would delete). The target's store is opened here, once.
  defp check_target(%Array{metadata: meta} = source, target_opts) do
    create_opts = Keyword.merge(copy_opts(meta, target_opts), target_opts)

    with {:ok, storage_opts, rest} <- ExZarr.split_storage_options(create_opts),
         {:ok, target_meta} <- Metadata.new(rest),
         :ok <- same_shape(meta, target_meta),
         :ok <- same_dtype(meta, target_meta),
         {:ok, store} <- ExZarr.storage(storage_opts),
         :ok <- apart(source, store, Keyword.get(rest, :prefix, "")) do
      {:ok, [storage: store] ++ Keyword.drop(target_opts, Keyword.keys(storage_opts))}
    end
  end

  defp same_dtype(%{dtype: d}, %{dtype: d}), do: :ok
  defp same_dtype(a, b), do: {:error, {:dtype_mismatch, a.dtype, b.dtype}}

  # Two nodes overlap when their stores' identities (`ExZarr.Storage.identity/2`, whose last
  # element is the object's path) agree but for the path, and one path is the other or
  # below it.
  defp apart(%Array{storage: storage, prefix: prefix}, store, target_prefix) do
    {place, path} = node_place(storage, prefix)
    {target_place, target_path} = node_place(store, target_prefix)

    if place == target_place and (below?(path, target_path) or below?(target_path, path)),
      do: {:error, {:target_overlaps_source, target_prefix}},
      else: :ok
  end

  defp node_place(storage, prefix) do
    identity = Storage.identity(storage, prefix)
    last = tuple_size(identity) - 1

    {Tuple.delete_at(identity, last),
     identity |> elem(last) |> to_string() |> String.trim_trailing("/")}
  end

  defp below?(path, above), do: path == above or String.starts_with?(path, above <> "/")

  # With `resume: true`, the target an earlier run created is reused.
  defp copy_target(meta, target_opts, resume) do
    create_opts = Keyword.merge(copy_opts(meta, target_opts), target_opts)

    case ExZarr.create(create_opts) do
      {:error, {:already_exists, _}} when resume == true -> reopen_target(target_opts)
      other -> other
    end
  end

  defp reopen_target(target_opts) do
    with {:ok, storage_opts, rest} <- ExZarr.split_storage_options(target_opts) do
      case ExZarr.open(storage_opts ++ Keyword.take(rest, [:prefix])) do
        {:ok, %Array{} = target} -> {:ok, target}
        {:ok, _group} -> {:error, {:already_exists, Keyword.get(rest, :prefix, "")}}
        error -> error
      end
    end
  end

  defp copy_opts(meta, target_opts) do
    format = Keyword.get(target_opts, :zarr_format, meta.zarr_format)

    base = [
      shape: meta.shape,
      chunks: meta.chunks,
      dtype: meta.dtype,
      fill_value: meta.fill_value,
      attributes: meta.attributes,
      zarr_format: format
    ]

    if keep_codecs?(meta, format, target_opts), do: base ++ [codecs: meta.codecs], else: base
  end

  # The source's codecs are carried over unless the target changes the format or the codecs,
  # or rechunks a sharded source (its sharding codec holds the inner chunk shape).
  defp keep_codecs?(meta, format, target_opts) do
    format == meta.zarr_format and
      not Enum.any?(@codec_opts, &Keyword.has_key?(target_opts, &1)) and
      not (Keyword.has_key?(target_opts, :chunks) and
             Enum.any?(meta.codecs, &(&1.name == "sharding_indexed")))
  end

  # --- options and units ---

  defp config(opts, arrays, fun, allowed \\ @job_opts) do
    with :ok <- Options.check(opts, allowed),
         {:ok, resume} <- opt_resume(Keyword.get(opts, :resume, false)),
         {:ok, nodes} <- opt_nodes(Keyword.get(opts, :nodes, [node()])),
         {:ok, conc} <- pos_int(:max_concurrency, Keyword.get(opts, :max_concurrency, 2)),
         {:ok, retries} <- non_neg_int(:retries, Keyword.get(opts, :retries, 3)),
         {:ok, timeout} <- opt_timeout(Keyword.get(opts, :timeout, :infinity)),
         {:ok, block} <- opt_block(Keyword.get(opts, :block, 1), hd(arrays)),
         {:ok, progress} <- opt_progress(Keyword.get(opts, :on_progress)),
         {:ok, max_memory} <- opt_max_memory(Keyword.get(opts, :max_memory)),
         :ok <- check_fun(fun),
         :ok <- check_shared(arrays, nodes) do
      {:ok,
       %{
         nodes: nodes,
         conc: conc,
         retries: retries,
         timeout: timeout,
         block: block,
         progress: progress,
         resume: resume,
         max_memory: max_memory,
         costs: %{}
       }}
    end
  end

  defp opt_nodes([_ | _] = nodes) do
    if not List.improper?(nodes) and Enum.all?(nodes, &is_atom/1),
      do: {:ok, Enum.uniq(nodes)},
      else: {:error, {:invalid_option, :nodes, nodes}}
  end

  defp opt_nodes(nodes), do: {:error, {:invalid_option, :nodes, nodes}}

  defp pos_int(_name, n) when is_integer(n) and n > 0, do: {:ok, n}
  defp pos_int(name, n), do: {:error, {:invalid_option, name, n}}

  defp non_neg_int(_name, n) when is_integer(n) and n >= 0, do: {:ok, n}
  defp non_neg_int(name, n), do: {:error, {:invalid_option, name, n}}

  defp opt_timeout(:infinity), do: {:ok, :infinity}
  defp opt_timeout(t), do: pos_int(:timeout, t)

  defp opt_block(:auto, _array), do: {:ok, :auto}

  defp opt_block(n, %Array{metadata: meta}) when is_integer(n) and n > 0,
    do: {:ok, meta.shape |> Tuple.to_list() |> Enum.map(fn _ -> 1 end) |> put_first(n)}

  defp opt_block(block, %Array{metadata: meta}) when is_tuple(block) do
    list = Tuple.to_list(block)

    if tuple_size(block) == tuple_size(meta.shape) and
         Enum.all?(list, &(is_integer(&1) and &1 > 0)),
       do: {:ok, list},
       else: {:error, {:invalid_option, :block, block}}
  end

  defp opt_block(block, _array), do: {:error, {:invalid_option, :block, block}}

  defp opt_max_memory(nil), do: {:ok, nil}
  defp opt_max_memory(bytes), do: pos_int(:max_memory, bytes)

  defp opt_resume(resume) when is_boolean(resume), do: {:ok, resume}
  defp opt_resume(resume), do: {:error, {:invalid_option, :resume, resume}}

  defp opt_progress(nil), do: {:ok, fn _ -> :ok end}
  defp opt_progress(fun) when is_function(fun, 1), do: {:ok, fun}
  defp opt_progress(fun), do: {:error, {:invalid_option, :on_progress, fun}}

  defp put_first([], _n), do: []
  defp put_first([_ | rest], n), do: [n | rest]

  defp check_fun({m, f, a}) when is_atom(m) and is_atom(f) and is_list(a), do: :ok
  defp check_fun(fun) when is_function(fun, 2), do: :ok
  defp check_fun(fun), do: {:error, {:invalid_option, :fun, fun}}

  defp check_shared(arrays, nodes) do
    if nodes == [node()] do
      :ok
    else
      Enum.find_value(arrays, :ok, fn %Array{storage: %Storage{module: mod, state: state}} ->
        if mod in @shared and not local_term?(state),
          do: nil,
          else: {:error, {:store_not_shared, mod}}
      end)
    end
  end

  # Whether a term holds something that only means anything on this node. A function (the
  # credentials of a cloud store) travels when its module is loaded on the other node, as
  # ExZarr's own are, and what it captured does.
  defp local_term?(t) when is_pid(t) or is_reference(t) or is_port(t), do: true
  defp local_term?(t) when is_function(t), do: local_term?(elem(Function.info(t, :env), 1))
  defp local_term?(t) when is_tuple(t), do: local_term?(Tuple.to_list(t))

  defp local_term?(t) when is_map(t), do: local_term?(Map.to_list(t))

  defp local_term?([h | t]), do: local_term?(h) or local_term?(t)
  defp local_term?(_), do: false

  defp same_shape(%Array{metadata: a}, %Array{metadata: b}), do: same_shape(a, b)
  defp same_shape(%Metadata{shape: s}, %Metadata{shape: s}), do: :ok
  defp same_shape(a, b), do: {:error, {:shape_mismatch, a.shape, b.shape}}

  # Boxes of `block` chunks along each axis (fewer at the array's end), on the chunk
  # boundaries of either grid kind. An array with an empty axis has none (without listing the
  # boxes of its other axes, which may be huge).
  defp units(%Array{metadata: %{shape: shape}, grid: grid}, block) do
    if Enum.any?(Tuple.to_list(shape), &(&1 == 0)),
      do: {:ok, []},
      else: nonempty_units(shape, grid, block)
  end

  # The units are listed (and planning walks them): their number is checked against memory
  # (`ExZarr.Limits`) first.
  defp nonempty_units(shape, grid, block) do
    axes = unit_axes(shape, grid, block)

    with :ok <- Limits.check_parts(unit_count(axes)), do: {:ok, list_units(axes)}
  end

  defp check_unit_count(%Array{metadata: %{shape: shape}, grid: grid}, block),
    do: Limits.check_parts(unit_count(unit_axes(shape, grid, block)))

  defp unit_axes(shape, grid, block) do
    [Tuple.to_list(shape), Tuple.to_list(grid), block]
    |> Enum.zip()
    |> Enum.map(fn {n, axis, b} -> {n, axis, b, ChunkGrid.axis_count(axis, n)} end)
  end

  defp unit_count(axes),
    do: Enum.reduce(axes, 1, fn {_, _, b, c}, acc -> acc * div(c + b - 1, b) end)

  defp list_units(axes) do
    ranges =
      Enum.map(axes, fn {n, axis, b, count} ->
        for k <- 0..(count - 1)//b, count > 0 do
          {ChunkGrid.axis_start(axis, k), min(ChunkGrid.axis_start(axis, min(k + b, count)), n)}
        end
      end)

    ranges
    |> Enum.reduce([[]], fn r, acc -> for a <- acc, x <- r, do: [x | a] end)
    |> Enum.map(fn rev ->
      {starts, stops} = rev |> Enum.reverse() |> Enum.unzip()
      %{start: List.to_tuple(starts), stop: List.to_tuple(stops)}
    end)
    |> Enum.with_index(fn box, n -> {n, box} end)
  end

  # `block: :auto`: the block of `Plan.block/4` for `max_memory:` (default
  # `@default_memory`) per node shared by its `max_concurrency` units; a block of one chunk
  # for arrays `Plan` cannot size (variable-length dtypes, rectilinear grids).
  defp auto_block(%{block: :auto} = conf, source, target) do
    budget = div(conf.max_memory || @default_memory, conf.conc)

    block =
      case grids(source, target) do
        {:ok, src, dst} -> Plan.block(src, dst, budget, length(conf.nodes))
        {:error, _} -> Enum.map(Tuple.to_list(target.metadata.shape), fn _ -> 1 end)
      end

    %{conf | block: block}
  end

  defp auto_block(conf, _source, _target), do: conf

  # With `max_memory:`, what each unit holds on its node (`conf.costs`, by unit number); a
  # unit that alone needs more fails the plan.
  defp unit_costs(%{max_memory: nil} = conf, _source, _target, _units), do: {:ok, conf}

  defp unit_costs(%{max_memory: max} = conf, source, target, units) do
    with {:ok, src, dst} <- grids(source, target) do
      costs = Map.new(units, fn {n, box} -> {n, Plan.unit_bytes(src, dst, box)} end)
      needed = costs |> Map.values() |> Enum.max(fn -> 0 end)

      if needed <= max,
        do: {:ok, %{conf | costs: costs}},
        else: {:error, {:max_memory_too_small, %{needed: needed, max_memory: max}}}
    end
  end

  # A map job's journal: `nil` without `resume: true`, else the prefix (in the target's store)
  # named after everything that makes the job what it is.
  defp journal(%{resume: false}, _source, _target, _fun, _units), do: nil

  defp journal(%{resume: true}, source, target, fun, units) do
    job = {ref(source), ref(target), fun_id(fun), units}
    id = :crypto.hash(:sha256, :erlang.term_to_binary(job, [:deterministic]))
    Journal.prefix(target.prefix, Base.encode16(id, case: :lower))
  end

  # A function's identity across processes and nodes (a fun term holds its creator's pid).
  defp fun_id({_m, _f, _a} = mfa), do: mfa

  defp fun_id(fun) do
    info = Function.info(fun)
    {info[:module], info[:name], info[:arity], info[:env]}
  end

  # --- what a node runs ---

  defp ref(%Array{storage: storage, metadata: meta, prefix: prefix, write_empty_chunks: w}),
    do: %{storage: storage, metadata: meta, prefix: prefix, write_empty_chunks: w}

  @doc false
  # Runs one unit on the node it is called on; called through `:erpc`.
  def run_unit({:map, source, target, fun, journal}, {n, box}) do
    with {:ok, src} <- reopen(source),
         {:ok, dst} <- reopen(target),
         {:ok, data} <- Array.get_slice(src, start: box.start, stop: box.stop),
         {:ok, out} <- result(apply_fun(fun, data, box)),
         :ok <- Array.set_slice(dst, out, start: box.start, stop: box.stop),
         :ok <- Journal.done(dst.storage, journal, n) do
      {:ok, %{bytes_read: data_size(data), bytes_written: data_size(out)}}
    end
  end

  def run_unit({:reduce, source, fun}, {_n, box}) do
    with {:ok, src} <- reopen(source),
         {:ok, data} <- Array.get_slice(src, start: box.start, stop: box.stop) do
      {:ok, %{value: apply_fun(fun, data, box)}}
    end
  end

  defp reopen(ref),
    do:
      Array.new(ref.metadata, ref.storage,
        prefix: ref.prefix,
        write_empty_chunks: ref.write_empty_chunks
      )

  defp apply_fun({m, f, extra}, data, box), do: apply(m, f, [data, box | extra])
  defp apply_fun(fun, data, box), do: fun.(data, box)

  defp result({:error, _} = error), do: error
  defp result({:ok, data}), do: {:ok, data}
  defp result(data), do: {:ok, data}

  defp data_size(data) when is_binary(data), do: byte_size(data)
  defp data_size(data) when is_list(data), do: Enum.reduce(data, 0, &(data_size(&1) + &2))
  defp data_size(_), do: 0

  # --- the coordinator ---

  defp map_acc(acc, stats),
    do: %{
      acc
      | bytes_read: acc.bytes_read + stats.bytes_read,
        bytes_written: acc.bytes_written + stats.bytes_written
    }

  defp reduce_acc(%{value: :none} = acc, %{value: v}, _combine), do: %{acc | value: v}
  defp reduce_acc(acc, %{value: v}, combine), do: %{acc | value: combine.(acc.value, v)}

  defp run(job, units, conf, fold, acc) do
    t0 = System.monotonic_time(:millisecond)

    state = %{
      job: job,
      conf: conf,
      queue: Enum.map(units, &{&1, 0}),
      total: length(units),
      live: conf.nodes,
      busy: Map.new(conf.nodes, &{&1, 0}),
      held: Map.new(conf.nodes, &{&1, 0}),
      running: %{},
      fold: fold,
      acc:
        Map.merge(acc, %{
          units: 0,
          retries: 0,
          failed: 0,
          nodes_lost: [],
          peak_bytes: 0,
          by_node: %{}
        })
    }

    with {:ok, acc} <- loop(state) do
      {:ok, Map.put(acc, :time_ms, System.monotonic_time(:millisecond) - t0)}
    end
  end

  defp loop(%{queue: [], running: running} = state) when map_size(running) == 0,
    do: {:ok, state.acc}

  defp loop(state) do
    state = dispatch(state)

    receive do
      {:DOWN, mref, :process, _pid, reason} when is_map_key(state.running, mref) ->
        {{unit, tries, node, _pid}, running} = Map.pop(state.running, mref)

        state = %{
          state
          | running: running,
            busy: Map.update!(state.busy, node, &(&1 - 1)),
            held: Map.update!(state.held, node, &(&1 - cost(state.conf, unit)))
        }

        outcome(state, unit, tries, node, unit_result(reason))
    end
  end

  defp unit_result({:unit, result}), do: result
  defp unit_result(reason), do: {:error, {:coordinator_task_failed, reason}}

  defp outcome(state, _unit, _tries, node, {:ok, stats}) do
    acc =
      drained_on_raise(state, fn ->
        acc = state.fold.(state.acc, stats)
        acc = %{acc | units: acc.units + 1, by_node: Map.update(acc.by_node, node, 1, &(&1 + 1))}

        state.conf.progress.(%{
          done: acc.units,
          total: state.total,
          failed: acc.failed,
          by_node: acc.by_node
        })

        acc
      end)

    loop(%{state | acc: acc})
  end

  # A node lost is not the unit's fault: the unit goes to another node without using a try.
  defp outcome(state, unit, tries, node, {:node_down, reason}) do
    lost = Enum.uniq(state.acc.nodes_lost ++ [node])
    state = %{state | live: List.delete(state.live, node), acc: %{state.acc | nodes_lost: lost}}
    retry(state, unit, tries - 1, {:node_down, node, reason})
  end

  defp outcome(state, unit, tries, _node, {:error, reason}) do
    state = %{state | acc: %{state.acc | failed: state.acc.failed + 1}}
    retry(state, unit, tries, reason)
  end

  defp retry(state, unit, tries, reason) do
    cond do
      tries >= state.conf.retries ->
        stop(state, {:unit_failed, elem(unit, 1), reason})

      state.live == [] ->
        stop(state, {:no_nodes_left, reason})

      true ->
        loop(%{state | queue: [{unit, tries + 1} | state.queue], acc: bump_retries(state.acc)})
    end
  end

  defp bump_retries(acc), do: %{acc | retries: acc.retries + 1}

  # `combine` or `on_progress` raising: raised once the units in flight have ended (`stop/2`).
  defp drained_on_raise(state, fun) do
    fun.()
  catch
    kind, reason ->
      drain(state.running)
      :erlang.raise(kind, reason, __STACKTRACE__)
  end

  # Ends a failed job once the units in flight have ended (each within `timeout:`), so that
  # none writes after the job returns (when a copy's intermediate array is removed).
  defp stop(state, reason) do
    drain(state.running)
    {:error, reason}
  end

  defp drain(running) do
    for mref <- Map.keys(running) do
      receive do
        {:DOWN, ^mref, :process, _pid, _reason} -> :ok
      end
    end

    :ok
  end

  # Hands queued units to live nodes with a free slot and, with `max_memory:`, room for the
  # unit's bytes, least busy first.
  defp dispatch(%{queue: []} = state), do: state

  defp dispatch(%{queue: [{unit, tries} | rest]} = state) do
    bytes = cost(state.conf, unit)

    state.live
    |> Enum.filter(&room?(state, &1, bytes))
    |> Enum.min_by(&state.busy[&1], fn -> nil end)
    |> case do
      nil ->
        state

      node ->
        %{job: job, conf: %{timeout: timeout}} = state
        {pid, mref} = spawn_monitor(fn -> exit({:unit, call(node, job, unit, timeout)}) end)
        held = Map.update!(state.held, node, &(&1 + bytes))

        dispatch(%{
          state
          | queue: rest,
            busy: Map.update!(state.busy, node, &(&1 + 1)),
            held: held,
            acc: %{state.acc | peak_bytes: max(state.acc.peak_bytes, held[node])},
            running: Map.put(state.running, mref, {unit, tries, node, pid})
        })
    end
  end

  defp room?(%{conf: conf} = state, node, bytes),
    do:
      state.busy[node] < conf.conc and
        (conf.max_memory == nil or state.held[node] + bytes <= conf.max_memory)

  defp cost(conf, {n, _box}), do: Map.get(conf.costs, n, 0)

  # Runs in a process of its own: `{:ok, stats}`, `{:error, reason}` or `{:node_down, reason}`.
  defp call(node, job, unit, timeout) do
    :erpc.call(node, __MODULE__, :run_unit, [job, unit], timeout)
  catch
    :error, {:erpc, :noconnection} ->
      {:node_down, :noconnection}

    :error, {:erpc, reason} ->
      {:error, reason}

    :error, reason ->
      {:error, reason}

    kind, reason ->
      {:error, {kind, reason}}
  end
end
