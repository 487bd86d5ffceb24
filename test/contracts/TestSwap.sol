// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// A constant-product pool with Uniswap V2's math and 0.3% fee, without LP shares: tests need prices and swaps,
/// not liquidity accounting. Made only by TestSwapRouter.
contract TestSwapPair {
    using SafeERC20 for IERC20;

    address public immutable token0;
    address public immutable token1;
    uint256 public reserve0;
    uint256 public reserve1;

    constructor(address tokenA, address tokenB) {
        (token0, token1) = tokenA < tokenB ? (tokenA, tokenB) : (tokenB, tokenA);
    }

    function getReserves() external view returns (uint256, uint256) {
        return (reserve0, reserve1);
    }

    /// Takes whatever was sent to the pool as its new reserves (the router's way of adding liquidity).
    function sync() external {
        reserve0 = IERC20(token0).balanceOf(address(this));
        reserve1 = IERC20(token1).balanceOf(address(this));
    }

    /// Pays out first and checks after, as Uniswap V2 does: the input must already be in the pool.
    function swap(uint256 amount0Out, uint256 amount1Out, address to) external {
        require(amount0Out > 0 || amount1Out > 0, "TestSwapPair: no output");
        (uint256 r0, uint256 r1) = (reserve0, reserve1);
        require(amount0Out < r0 && amount1Out < r1, "TestSwapPair: not enough liquidity");
        if (amount0Out > 0) IERC20(token0).safeTransfer(to, amount0Out);
        if (amount1Out > 0) IERC20(token1).safeTransfer(to, amount1Out);
        uint256 b0 = IERC20(token0).balanceOf(address(this));
        uint256 b1 = IERC20(token1).balanceOf(address(this));
        uint256 in0 = b0 > r0 - amount0Out ? b0 - (r0 - amount0Out) : 0;
        uint256 in1 = b1 > r1 - amount1Out ? b1 - (r1 - amount1Out) : 0;
        require(in0 > 0 || in1 > 0, "TestSwapPair: no input");
        // The fee stays in the pool: the product must hold after charging 0.3% on the input.
        require((b0 * 1000 - in0 * 3) * (b1 * 1000 - in1 * 3) >= r0 * r1 * 1_000_000, "TestSwapPair: K");
        (reserve0, reserve1) = (b0, b1);
    }
}

/// The Uniswap V2 router surface swap mode uses (getAmountsOut, swapExactTokensForTokens), plus pool setup.
contract TestSwapRouter {
    using SafeERC20 for IERC20;

    mapping(address => mapping(address => address)) public getPair;

    function createPair(address tokenA, address tokenB) public returns (address pair) {
        require(tokenA != tokenB, "TestSwapRouter: identical tokens");
        require(getPair[tokenA][tokenB] == address(0), "TestSwapRouter: pair exists");
        pair = address(new TestSwapPair(tokenA, tokenB));
        getPair[tokenA][tokenB] = pair;
        getPair[tokenB][tokenA] = pair;
    }

    /// Moves both amounts from the caller into the pool (creating it when needed).
    function addLiquidity(address tokenA, address tokenB, uint256 amountA, uint256 amountB) external returns (address pair) {
        pair = getPair[tokenA][tokenB];
        if (pair == address(0)) pair = createPair(tokenA, tokenB);
        IERC20(tokenA).safeTransferFrom(msg.sender, pair, amountA);
        IERC20(tokenB).safeTransferFrom(msg.sender, pair, amountB);
        TestSwapPair(pair).sync();
    }

    function getAmountOut(uint256 amountIn, uint256 reserveIn, uint256 reserveOut) public pure returns (uint256) {
        require(amountIn > 0, "TestSwapRouter: insufficient input amount");
        require(reserveIn > 0 && reserveOut > 0, "TestSwapRouter: insufficient liquidity");
        uint256 inWithFee = amountIn * 997;
        return (inWithFee * reserveOut) / (reserveIn * 1000 + inWithFee);
    }

    function getAmountsOut(uint256 amountIn, address[] calldata path) public view returns (uint256[] memory amounts) {
        require(path.length >= 2, "TestSwapRouter: invalid path");
        amounts = new uint256[](path.length);
        amounts[0] = amountIn;
        for (uint256 i; i < path.length - 1; ++i) {
            (uint256 reserveIn, uint256 reserveOut) = _reserves(path[i], path[i + 1]);
            amounts[i + 1] = getAmountOut(amounts[i], reserveIn, reserveOut);
        }
    }

    function swapExactTokensForTokens(
        uint256 amountIn,
        uint256 amountOutMin,
        address[] calldata path,
        address to,
        uint256 deadline
    ) external returns (uint256[] memory amounts) {
        require(deadline >= block.timestamp, "TestSwapRouter: expired");
        amounts = getAmountsOut(amountIn, path);
        require(amounts[amounts.length - 1] >= amountOutMin, "TestSwapRouter: insufficient output amount");
        IERC20(path[0]).safeTransferFrom(msg.sender, _pair(path[0], path[1]), amountIn);
        for (uint256 i; i < path.length - 1; ++i) {
            TestSwapPair pair = TestSwapPair(_pair(path[i], path[i + 1]));
            uint256 out = amounts[i + 1];
            (uint256 out0, uint256 out1) = path[i] == pair.token0() ? (uint256(0), out) : (out, uint256(0));
            address recipient = i < path.length - 2 ? _pair(path[i + 1], path[i + 2]) : to;
            pair.swap(out0, out1, recipient);
        }
    }

    function _pair(address a, address b) private view returns (address pair) {
        pair = getPair[a][b];
        require(pair != address(0), "TestSwapRouter: no pair");
    }

    function _reserves(address tokenIn, address tokenOut) private view returns (uint256, uint256) {
        TestSwapPair pair = TestSwapPair(_pair(tokenIn, tokenOut));
        (uint256 r0, uint256 r1) = pair.getReserves();
        return tokenIn == pair.token0() ? (r0, r1) : (r1, r0);
    }
}
